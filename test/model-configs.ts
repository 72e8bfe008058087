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

/**
 * deepseek-ai/DeepSeek-V4-Flash (284B total, 13B active, 43 blocks, 1M context). From its model card and the key names
 * llama.cpp's converter reads (conversion/deepseek.py): hidden 4096, 64 heads of 512 with one key head, q and o LoRA
 * rank 1024, rope 64, 256 experts (6 used) of 2048 plus one shared, sliding window 128, 64 indexer heads of 128 (top
 * 512), hc_mult 4; compress ratios 0 on blocks 0–1, then 4 on even and 128 on odd blocks. Estimates (not read from a
 * published config): o_groups 8, num_hash_layers 3, the vocabulary
 * (DeepSeek-V3's 129280), intermediate_size (unused: every block is MoE).
 */
export const DEEPSEEK_V4_FLASH = {
  model_type: 'deepseek_v4',
  hidden_size: 4096,
  num_hidden_layers: 43,
  num_attention_heads: 64,
  num_key_value_heads: 1,
  head_dim: 512,
  qk_rope_head_dim: 64,
  q_lora_rank: 1024,
  o_lora_rank: 1024,
  o_groups: 8,
  intermediate_size: 2048,
  moe_intermediate_size: 2048,
  n_routed_experts: 256,
  n_shared_experts: 1,
  num_experts_per_tok: 6,
  num_hash_layers: 3,
  sliding_window: 128,
  compress_ratios: Array.from({ length: 43 }, (_, il) => (il < 2 ? 0 : il % 2 === 0 ? 4 : 128)),
  index_n_heads: 64,
  index_head_dim: 128,
  index_topk: 512,
  hc_mult: 4,
  vocab_size: 129280,
  max_position_embeddings: 1048576,
  tie_word_embeddings: false,
} as const

/**
 * zai-org/GLM-5.2 (753B, 78 blocks, 1M context): GLM-5's published shape (hidden 6144, 64 heads, MLA with q LoRA 2048,
 * kv LoRA 512, qk head 192 + 64 rope, v head 256; 3 dense blocks of 12288, then 256 experts of 2048 with 8 used and one
 * shared; indexer 32 heads of 128, top-k 2048; vocabulary 154880), taken as GLM-5.2's too: estimates, as is the
 * full/shared indexer pattern, llama.cpp's GLM_5_2_DEFAULT_INDEXER_TYPES (blocks 0, 1 and every fourth from 2 full).
 */
export const GLM_5_2 = {
  model_type: 'glm_moe_dsa',
  hidden_size: 6144,
  num_hidden_layers: 78,
  num_attention_heads: 64,
  num_key_value_heads: 64,
  intermediate_size: 12288,
  moe_intermediate_size: 2048,
  n_routed_experts: 256,
  n_shared_experts: 1,
  num_experts_per_tok: 8,
  first_k_dense_replace: 3,
  q_lora_rank: 2048,
  kv_lora_rank: 512,
  qk_nope_head_dim: 192,
  qk_rope_head_dim: 64,
  v_head_dim: 256,
  index_n_heads: 32,
  index_head_dim: 128,
  index_topk: 2048,
  vocab_size: 154880,
  max_position_embeddings: 1048576,
  tie_word_embeddings: false,
} as const

/**
 * Ornith-1.0-397B: Qwen3.5-397B-A17B's text config (60 blocks, full attention on every 4th, gated delta net on the
 * others; 512 experts of 1024 with 10 used plus a shared one of 1024; 32 heads of 256 with 2 KV heads; linear attention
 * 16 key and 64 value heads of 128, conv kernel 4; vocabulary 248320, context 262144). Ornith publishes no config of
 * its own: these are estimates from the model it is based on.
 */
export const ORNITH_1_0_397B = {
  model_type: 'qwen3_5_moe',
  hidden_size: 4096,
  num_hidden_layers: 60,
  num_attention_heads: 32,
  num_key_value_heads: 2,
  head_dim: 256,
  intermediate_size: 1024,
  moe_intermediate_size: 1024,
  shared_expert_intermediate_size: 1024,
  num_experts: 512,
  num_experts_per_tok: 10,
  full_attention_interval: 4,
  linear_conv_kernel_dim: 4,
  linear_key_head_dim: 128,
  linear_value_head_dim: 128,
  linear_num_key_heads: 16,
  linear_num_value_heads: 64,
  vocab_size: 248320,
  max_position_embeddings: 262144,
  tie_word_embeddings: false,
} as const
