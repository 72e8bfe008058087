import type { AppHandlers, AppMethod } from '../../../protocol'

type GroupOf<M> = M extends `${infer G}.${string}` ? G : never
/** The groups of AppApi methods, by their names' first part: 'hosting' for hosting.start, hosting.stop, … */
export type AppGroup = GroupOf<AppMethod>
/** The handlers of one group's methods, e.g. every hosting.* method. */
export type GroupHandlers<G extends AppGroup> = Pick<AppHandlers, Extract<AppMethod, `${G}.${string}`>>

/**
 * One controller per group of AppApi methods, each with that group's handlers: a method AppApi gains
 * without a handler in its controller fails to compile here.
 */
export type ControllerRegistry = { readonly [G in AppGroup]: { readonly handlers: GroupHandlers<G> } }

/** The registry's handlers as the one table dispatchAppCall runs over. */
export function handlersOf(registry: ControllerRegistry): AppHandlers {
  // Complete: the registry has every group, and each group's controller every method of it.
  return Object.assign({}, ...Object.values(registry).map((c) => c.handlers)) as AppHandlers
}
