import { type MemoryHandle, MnemoError, type PlanAccess, planAccess } from '@mnemo/core';

/** `INVALID_INPUT` naming the offending field. */
export function invalid(field: string, message: string): MnemoError {
  return new MnemoError('INVALID_INPUT', `${field}: ${message}`, { details: { field } });
}

/** Checks that `value` (named `name`) is an object with no keys but `known`. */
export function checkOptions(name: string, value: unknown, known: readonly string[]): void {
  if (typeof value !== 'object' || value === null) throw invalid(name, 'must be an object');
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw invalid(`${name}.${key}`, 'is not a known option');
  }
}

/** The handle's plan access; `EXPERIENCE_DISABLED` when the engine's experience memory is off. */
export function enabledPlanAccess(handle: MemoryHandle): PlanAccess {
  const access = planAccess(handle);
  if (!access.enabled) {
    throw new MnemoError(
      'EXPERIENCE_DISABLED',
      'experience memory is off: create the engine with experienceMemory: true or withExperienceMemory(engine)',
    );
  }
  return access;
}
