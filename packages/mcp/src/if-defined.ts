/**
 * `{ [key]: value }`, or an empty object when the value is undefined, to spread into an
 * input: absent options stay absent (the engine rejects unknown keys, and an explicit
 * `undefined` would reach its validation).
 */
export function ifDefined<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
