import type { Engine } from '@mnemo/core';

/**
 * The same engine with experience memory on. The tier is off by default, so
 * installing this package changes nothing until this (or the engine option
 * `experienceMemory: true`) is used.
 */
export function withExperienceMemory(engine: Engine): Engine {
  return engine.with({ experienceMemory: true });
}
