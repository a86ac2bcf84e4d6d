/**
 * Returns a new unique id on every call. Ids order records and audit events
 * (ties in rankings break by id), so the default, UUIDv7, increases with time.
 * Must be unique across every process writing the same store.
 */
export type IdGenerator = () => string;
