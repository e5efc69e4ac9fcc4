/** Run a change, then reload (unless `reload: false`); false when refused (the message is shown). */
export type CollectionAct = (fn: () => Promise<unknown>, opts?: { done?: string; reload?: boolean }) => Promise<boolean>;
