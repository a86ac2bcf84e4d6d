import { invalidInput } from './errors.js';
import type { RecordFilters } from './ports/memory-store.js';
import {
  type JsonObject,
  type JsonValue,
  MEMORY_TYPES,
  type MemoryType,
  PERMISSIONS,
  type Permission,
  RESERVED_TAG_PATTERN,
  SCOPES,
  type Scope,
} from './records.js';

/** Charset of agent and org ids. */
export const ID_PATTERN = /^[A-Za-z0-9._-]{1,256}$/;

export interface Limits {
  /** Largest content in UTF-8 bytes (default 1 MiB). */
  maxContentBytes: number;
  /** Most tags on one record (default 64). */
  maxTags: number;
  /** Longest tag in characters (default 128). */
  maxTagLength: number;
  /** Largest metadata as canonical JSON, in UTF-8 bytes (default 64 KiB). */
  maxMetadataBytes: number;
  /** Deepest metadata nesting (default 16). */
  maxMetadataDepth: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxContentBytes: 1024 * 1024,
  maxTags: 64,
  maxTagLength: 128,
  maxMetadataBytes: 64 * 1024,
  maxMetadataDepth: 16,
});

/**
 * Bounds on embeddings, so that every store can search them exactly: no
 * component beyond ±2^50, and a non-zero vector's Euclidean norm at least
 * 2^-50 (real embedders are many orders of magnitude inside both). Within
 * them a similarity computed in single precision (pgvector's) stays within
 * `singlePrecisionCosineError` of the exact one, which lets a store rescore
 * a few candidates exactly instead of every record.
 */
export const EMBEDDING_BOUNDS = Object.freeze({ maxComponent: 2 ** 50, minNorm: 2 ** -50 });

/** Why `vector` is not a storable embedding (see `EMBEDDING_BOUNDS`), or null when it is. */
export function embeddingProblem(vector: Float32Array): string | null {
  let squares = 0;
  for (const x of vector) {
    if (!Number.isFinite(x)) return 'has a non-finite value';
    if (Math.abs(x) > EMBEDDING_BOUNDS.maxComponent) return 'has a component beyond ±2^50';
    squares += x * x;
  }
  if (squares !== 0 && Math.sqrt(squares) < EMBEDDING_BOUNDS.minNorm)
    return 'is not zero but has a norm below 2^-50';
  return null;
}

/**
 * How far a cosine similarity of two `dimensions`-long embeddings within
 * `EMBEDDING_BOUNDS`, computed with single-precision sums (as pgvector does),
 * can be from the exact one: 2γₙ (γₙ = n·u / (1 − n·u), u = 2^-24) for the
 * rounding of the dot product and of both norms, with 10 % to spare, plus
 * 1e-12 for the double-precision steps and what underflows.
 */
export function singlePrecisionCosineError(dimensions: number): number {
  const nu = dimensions * 2 ** -24;
  return 2.2 * (nu / (1 - nu)) + 1e-12;
}

export const DEFAULT_RECALL_LIMIT = 10;
export const MAX_RECALL_LIMIT = 100;

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
// biome-ignore lint/suspicious/noControlCharactersInRegex: that is what it finds
const CONTROL = /[\u0000-\u001F\u007F]/;
/**
 * Nothing but Unicode White_Space (and the BOM, which `trim()` also drops):
 * `trim()` alone misses U+0085 NEXT LINE.
 */
const BLANK = /^[\p{White_Space}\uFEFF]*$/u;

/** A string that metadata may hold: no NUL, no lone surrogate. */
export function validateText(field: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidInput(field, 'must be a string');
  checkText(field, value);
  return value;
}

/** Rejects what no store can hold faithfully: lone surrogates and NUL. */
function checkText(field: string, value: string): void {
  if (LONE_SURROGATE.test(value)) throw invalidInput(field, 'contains a lone surrogate');
  if (value.includes('\u0000')) throw invalidInput(field, 'contains a NUL character');
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

export function validateId(field: string, value: unknown): string {
  if (typeof value !== 'string' || !ID_PATTERN.test(value)) {
    throw invalidInput(field, 'must be 1-256 characters of A-Z a-z 0-9 . _ -');
  }
  return value;
}

export function validateContent(field: string, value: unknown, limits: Limits): string {
  if (typeof value !== 'string') throw invalidInput(field, 'must be a string');
  checkText(field, value);
  if (BLANK.test(value)) throw invalidInput(field, 'must not be blank');
  if (Buffer.byteLength(value, 'utf8') > limits.maxContentBytes) {
    throw invalidInput(field, `must be at most ${limits.maxContentBytes} bytes`);
  }
  return value;
}

/** A short label (tag, thread id, source type): non-blank, no control characters. */
export function validateLabel(field: string, value: unknown, maxLength: number): string {
  if (typeof value !== 'string') throw invalidInput(field, 'must be a string');
  checkText(field, value);
  if (BLANK.test(value)) throw invalidInput(field, 'must not be blank');
  if (CONTROL.test(value)) throw invalidInput(field, 'must not contain control characters');
  // Characters are code points: an emoji is one, not the two UTF-16 units of its length.
  if (value.length > maxLength && codePoints(value) > maxLength)
    throw invalidInput(field, `must be at most ${maxLength} characters`);
  return value;
}

function codePoints(value: string): number {
  let count = 0;
  for (const _ of value) count += 1;
  return count;
}

/** Whether `validateLabel` takes `value` (without the error it would throw). */
export function isLabel(value: unknown, maxLength: number): value is string {
  try {
    validateLabel('value', value, maxLength);
    return true;
  } catch {
    return false;
  }
}

function validateEnum<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidInput(field, `must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

export const validateMemoryType = (field: string, value: unknown): MemoryType =>
  validateEnum(field, value, MEMORY_TYPES);
export const validateScope = (field: string, value: unknown): Scope =>
  validateEnum(field, value, SCOPES);
export const validatePermission = (field: string, value: unknown): Permission =>
  validateEnum(field, value, PERMISSIONS);

export function validateUnitInterval(field: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalidInput(field, 'must be a number from 0 to 1');
  }
  return value === 0 ? 0 : value; // -0 becomes 0
}

export function validateDate(field: string, value: unknown): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) {
    throw invalidInput(field, 'must be a valid Date');
  }
  return new Date(value.getTime());
}

/** An array of at most `maxItems` items and no holes (`map` and `every` skip holes). */
export function validateArray(field: string, value: unknown, maxItems: number): unknown[] {
  if (!Array.isArray(value)) throw invalidInput(field, 'must be an array');
  if (value.length > maxItems) throw invalidInput(field, `must have at most ${maxItems} items`);
  checkNoHoles(field, value);
  return value;
}

function checkNoHoles(field: string, value: unknown[]): void {
  for (let index = 0; index < value.length; index += 1) {
    if (!(index in value)) throw invalidInput(`${field}[${index}]`, 'is a hole in the array');
  }
}

/**
 * Tags: distinct (first occurrence kept), each a label. Reserved `__x__` tags
 * are rejected unless `allowReserved` (the plan write path).
 */
export function validateTags(
  field: string,
  value: unknown,
  limits: Limits,
  allowReserved = false,
): string[] {
  const tags = validateArray(field, value, limits.maxTags).map((tag, index) =>
    validateLabel(`${field}[${index}]`, tag, limits.maxTagLength),
  );
  if (!allowReserved) {
    const reserved = tags.find((tag) => RESERVED_TAG_PATTERN.test(tag));
    if (reserved !== undefined) throw invalidInput(field, `tag "${reserved}" is reserved`);
  }
  return [...new Set(tags)];
}

/**
 * Metadata: a plain JSON object (no cycles, no class instances, finite
 * numbers, no `__proto__` or symbol keys, no holes in arrays), returned as a
 * fresh deep copy.
 */
export function validateMetadata(field: string, value: unknown, limits: Limits): JsonObject {
  if (!isPlainObject(value)) throw invalidInput(field, 'must be a plain object');
  const seen = new Set<object>();
  const copy = (item: unknown, path: string, depth: number): JsonValue => {
    if (item === null || typeof item === 'boolean') return item;
    if (typeof item === 'string') {
      checkText(path, item);
      return item;
    }
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) throw invalidInput(path, 'must be a finite number');
      return item === 0 ? 0 : item;
    }
    if (typeof item !== 'object') throw invalidInput(path, `${typeof item} is not JSON`);
    if (depth >= limits.maxMetadataDepth) {
      throw invalidInput(path, `nests deeper than ${limits.maxMetadataDepth} levels`);
    }
    if (seen.has(item)) throw invalidInput(path, 'is cyclic');
    seen.add(item);
    let result: JsonValue;
    if (Array.isArray(item)) {
      checkNoHoles(path, item);
      result = item.map((element, index) => copy(element, `${path}[${index}]`, depth + 1));
    } else {
      if (!isPlainObject(item))
        throw invalidInput(path, 'must be a plain object, array or JSON primitive');
      if (Object.getOwnPropertySymbols(item).length > 0)
        throw invalidInput(path, 'must not have symbol keys');
      const object: JsonObject = {};
      for (const key of Object.keys(item)) {
        if (key === '__proto__') throw invalidInput(path, 'must not have a "__proto__" key');
        checkText(`${path} key`, key);
        object[key] = copy(item[key], `${path}.${key}`, depth + 1);
      }
      result = object;
    }
    seen.delete(item);
    return result;
  };
  const metadata = copy(value, field, 0) as JsonObject;
  if (Buffer.byteLength(JSON.stringify(metadata), 'utf8') > limits.maxMetadataBytes) {
    throw invalidInput(field, `must serialize to at most ${limits.maxMetadataBytes} bytes`);
  }
  return metadata;
}

/** An integer from 1 to `max`; `fallback` when absent. */
function countUpTo(field: string, value: unknown, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw invalidInput(field, `must be an integer from 1 to ${max}`);
  }
  return value;
}

export function validateLimit(field: string, value: unknown): number {
  return countUpTo(field, value, DEFAULT_RECALL_LIMIT, MAX_RECALL_LIMIT);
}

/** Most records or events one page of an operator call reads, and holds in memory. */
export const MAX_PAGE_SIZE = 10_000;

/** The `pageSize` of an operator call (`fallback` when absent). */
export function validatePageSize(value: unknown, fallback: number): number {
  return countUpTo('pageSize', value, fallback, MAX_PAGE_SIZE);
}

/**
 * A filter's list, distinct, or undefined when absent or, for `tagsAll`
 * (`emptyMatches`), empty: every record has all of no tags. An empty list
 * that no record can match (a memory type, scope or tag among none) is
 * INVALID_INPUT: dropped, it would widen a recall, or a forget, to every record.
 */
function nonEmptyList<T>(
  field: string,
  value: unknown,
  item: (field: string, value: unknown) => T,
  emptyMatches = false,
): T[] | undefined {
  if (value === undefined) return undefined;
  const items = validateArray(field, value, 1000).map((element, index) =>
    item(`${field}[${index}]`, element),
  );
  if (items.length === 0 && !emptyMatches) {
    throw invalidInput(field, 'must not be empty (no record would match); leave it out instead');
  }
  return items.length === 0 ? undefined : [...new Set(items)];
}

/** Validates recall/forget filters; unknown keys are rejected so typos never widen a query. */
export function validateFilters(field: string, value: unknown, limits: Limits): RecordFilters {
  if (value === undefined) return {};
  if (!isPlainObject(value)) throw invalidInput(field, 'must be an object');
  const known = [
    'memoryTypes',
    'scopes',
    'tagsAny',
    'tagsAll',
    'minImportance',
    'createdAfter',
    'createdBefore',
    'threadId',
  ];
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw invalidInput(`${field}.${key}`, 'is not a known filter');
  }
  const label = (f: string, v: unknown) => validateLabel(f, v, limits.maxTagLength);
  const filters: {
    -readonly [K in keyof RecordFilters]: RecordFilters[K];
  } = {};
  const memoryTypes = nonEmptyList(`${field}.memoryTypes`, value.memoryTypes, validateMemoryType);
  if (memoryTypes) filters.memoryTypes = memoryTypes;
  const scopes = nonEmptyList(`${field}.scopes`, value.scopes, validateScope);
  if (scopes) filters.scopes = scopes;
  const tagsAny = nonEmptyList(`${field}.tagsAny`, value.tagsAny, label);
  if (tagsAny) filters.tagsAny = tagsAny;
  const tagsAll = nonEmptyList(`${field}.tagsAll`, value.tagsAll, label, true);
  if (tagsAll) filters.tagsAll = tagsAll;
  if (value.minImportance !== undefined) {
    filters.minImportance = validateUnitInterval(`${field}.minImportance`, value.minImportance);
  }
  if (value.createdAfter !== undefined) {
    filters.createdAfter = validateDate(`${field}.createdAfter`, value.createdAfter);
  }
  if (value.createdBefore !== undefined) {
    filters.createdBefore = validateDate(`${field}.createdBefore`, value.createdBefore);
  }
  if (value.threadId !== undefined)
    filters.threadId = validateLabel(`${field}.threadId`, value.threadId, 256);
  return filters;
}

/** Rejects keys outside `known`, so a misspelt option fails loudly instead of being ignored. */
export function checkKeys(
  field: string,
  value: unknown,
  known: readonly string[],
): Record<string, unknown> {
  if (!isPlainObject(value)) throw invalidInput(field, 'must be an object');
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw invalidInput(`${field}.${key}`, 'is not a known option');
  }
  return value;
}
