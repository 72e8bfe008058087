// Published Hugging Face config.json values of the models whose shapes drive placement (no weights).

/** Qwen/Qwen3-30B-A3B config.json: 48 blocks of 128 experts (8 used), 4 KV heads of 128. */
export const QWEN3_30B_A3B = {
  model_type: 'qwen3_moe',
  hidden_size: 2048,
  num_hidden_layers: 48,
  num_attention_heads: 32,
  num_key_value_heads: 4,
  head_dim: 128,
  intermediate_size: 6144,
  moe_intermediate_size: 768,
  num_experts: 128,
  num_experts_per_tok: 8,
  vocab_size: 151936,
  max_position_embeddings: 40960,
  tie_word_embeddings: false,
} as const

/** deepseek-ai/DeepSeek-V3 config.json: 61 blocks, the first 3 dense, MLA with kv_lora_rank 512 and rope 64. */
export const DEEPSEEK_V3 = {
  model_type: 'deepseek_v3',
  hidden_size: 7168,
  num_hidden_layers: 61,
  num_attention_heads: 128,
  num_key_value_heads: 128,
  intermediate_size: 18432,
  moe_intermediate_size: 2048,
  n_routed_experts: 256,
  n_shared_experts: 1,
  num_experts_per_tok: 8,
  first_k_dense_replace: 3,
  q_lora_rank: 1536,
  kv_lora_rank: 512,
  qk_nope_head_dim: 128,
  qk_rope_head_dim: 64,
  v_head_dim: 128,
  vocab_size: 129280,
  max_position_embeddings: 163840,
  tie_word_embeddings: false,
} as const
