export * from './errors'
export * from './manifest'
