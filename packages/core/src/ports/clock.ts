/** The engine's only source of time. Inject a manual clock in tests; never sleep. */
export interface Clock {
  /** The current instant. Must not go backwards within one engine. */
  now(): Date;
}
