import { createHash } from 'node:crypto';
import * as fc from 'fast-check';
import { planAccess } from '../../engine/plan-access.js';
import { type ErrorCode, MnemoError } from '../../errors.js';
import { MEMORY_TYPES, type MemoryRecord, PERMISSIONS, SCOPES } from '../../records.js';
import { createHashEmbedder } from '../hash-embedder.js';
import { tally } from '../reliability-tally.js';
import { type Fixture, type Harness, START, type TestApi } from './harness.js';

/**
 * Property-based fuzzing of every public input of a handle. Each property
 * runs many generated inputs against one store (opening a store per run is
 * slow) and checks, for every call: it succeeds, or throws a `MnemoError`
 * with an expected code and leaves records, grants and the audit chain
 * exactly as they were. The seed is fixed so CI runs are deterministic.
 */
const SEED = 20_260_101;

/** SQL metacharacters and comment sequences: stored byte-for-byte, never interpreted. */
const SQL = [
  "'",
  '"',
  ';',
  '--',
  '/*',
  '*/',
  '\\',
  '%',
  '_',
  '$1',
  '::text',
  "' OR 1=1 --",
  "'); DROP TABLE records; --",
  "\\'",
  '$$',
  '$tag$',
  '?',
  ':name',
  '@p1',
  '`',
  '||',
  "%' ESCAPE '\\",
  '[a-z]*',
];

/** Text no store can hold faithfully, or that confuses naive handling. */
const HOSTILE = [
  '\u0000',
  'a\u0000b',
  '\uD800',
  '\uDFFF',
  'x\uDBFFy',
  '\uDC00\uD800',
  '\u202E',
  '\u202Egnp.exe',
  '\u200F',
  '\uFEFF',
  '\u00A0',
  '\u2028',
  '\u0085',
  '\t',
  '\n',
  '\r\n',
  ' ',
  '',
  '\u007F',
  '\u001B[31m',
  'e\u0301',
  'ä',
  '😀',
  'NaN',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  '__experience_plan__',
  '__x__',
  'x'.repeat(257),
];

const WORDS = ['alpha', 'beta', 'gamma', 'seed', 'memory', 'Ünïcödé', 'or', '1'];

const START_MS = Date.parse(START);
const MIB = 1024 * 1024;

/** A deterministic, incompressible run of hex digits. */
function token(length: number): string {
  let out = '';
  for (let i = 0; out.length < length; i += 1) {
    out += createHash('sha256').update(`token-${i}`).digest('hex');
  }
  return out.slice(0, length);
}

function deepObject(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < depth; i += 1) value = { nested: value };
  return value;
}

function deepArray(depth: number): unknown[] {
  let value: unknown[] = ['leaf'];
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}

/** An object with a real own `__proto__` key (not a prototype change). */
function withOwnKey(object: object, key: string, value: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = { ...object };
  Object.defineProperty(copy, key, { value, enumerable: true, configurable: true, writable: true });
  return copy;
}

function specialMetadata(): unknown[] {
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  const cyclicArray: unknown[] = [1];
  cyclicArray.push(cyclicArray);
  const shared = { x: 1 };
  const nullProto = Object.create(null) as Record<string, unknown>;
  nullProto.k = 'v';
  return [
    cyclic,
    { wrap: cyclic },
    { list: cyclicArray },
    { a: shared, b: shared },
    deepObject(14),
    deepObject(15),
    deepObject(16),
    deepObject(200),
    { list: deepArray(14) },
    { list: deepArray(40) },
    JSON.parse('{"__proto__": {"polluted": true}}'),
    JSON.parse('{"a": {"__proto__": {"polluted": true}}}'),
    JSON.parse('{"a": [{"__proto__": {"polluted": true}}]}'),
    JSON.parse('{"constructor": {"prototype": {"polluted": true}}}'),
    { prototype: { polluted: true } },
    { constructor: 'x', toString: 1, valueOf: null, hasOwnProperty: [] },
    nullProto,
    { n: Number.NaN },
    { n: Number.POSITIVE_INFINITY },
    { n: Number.NEGATIVE_INFINITY },
    { n: -0, m: [-0] },
    { big: 1n },
    { d: new Date(START_MS) },
    { u: undefined },
    { f: () => 1 },
    { s: Symbol('s') },
    { m: new Map([[1, 2]]) },
    { '\u0000': 1 },
    { '\uD800': 1 },
    { '\u202E': '\u202E' },
    { "'; DROP TABLE records; --": "' OR 1=1 --", $1: '::text', '%': '_' },
    { blob: 'x'.repeat(64 * 1024) },
    { blob: 'x'.repeat(64 * 1024 - 20) },
  ];
}

/** Anything that is not the right kind of value. */
function junkValues(): unknown[] {
  return [
    undefined,
    null,
    true,
    false,
    0,
    -0,
    1,
    -1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    2 ** 53 + 2,
    1n,
    Symbol('junk'),
    [],
    {},
    [[]],
    [null],
    new Date(Number.NaN),
    new Date(START_MS),
    new Map(),
    new Set(['a']),
    /x/,
    new Uint8Array(2),
    new String('boxed'),
    Object.create(null),
    () => 'fn',
    new Error('e'),
  ];
}

const junk = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...junkValues()) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.bigInt() },
);

// fast-check tabulates every code point (about 1.4 s) when the first 'binary' string
// arbitrary is made. Made on first use instead, so that importing this kit (for the hash
// embedder, say) does not pay for it; only a run of the fuzz spec does.
let binaryString: fc.Arbitrary<string> | undefined;
const lazyBinaryString = fc
  .constant(null)
  .chain(() => (binaryString ??= fc.string({ unit: 'binary', maxLength: 6 })));

const piece = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SQL) },
  { weight: 3, arbitrary: fc.constantFrom(...WORDS) },
  { weight: 2, arbitrary: fc.constantFrom(...HOSTILE) },
  { weight: 2, arbitrary: fc.string({ maxLength: 8 }) },
  { weight: 1, arbitrary: lazyBinaryString },
  {
    weight: 1,
    // Any UTF-16 code unit, lone surrogates included.
    arbitrary: fc.string({
      unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
      maxLength: 4,
    }),
  },
);

/** Strings built from SQL metacharacters, words and hostile text. */
const text = fc
  .array(piece, { minLength: 1, maxLength: 6 })
  .map((pieces) => pieces.join(pieces.length % 2 === 0 ? ' ' : ''));

/** Mostly `valid`, sometimes hostile text, sometimes junk. */
function mostly<T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 1, arbitrary: text },
    { weight: 1, arbitrary: junk },
  );
}

const dateArb = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .integer({ min: 1, max: 20 * 365 * 86_400_000 })
      .map((ms) => new Date(START_MS + ms)),
  },
  { weight: 2, arbitrary: fc.date({ noInvalidDate: false }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      new Date(8.64e15),
      new Date(-8.64e15),
      new Date(START_MS),
      new Date(START_MS + 1),
      new Date(START_MS - 1),
      new Date(253_402_300_800_000), // year 10000
      new Date(Number.NaN),
      new Date(0),
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('2030-01-01T00:00:00Z', START_MS + 1000) },
  { weight: 1, arbitrary: junk },
);

const unitArb = fc.oneof(
  { weight: 4, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }) },
  { weight: 2, arbitrary: fc.double() },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      -0,
      0,
      1,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      1 + Number.EPSILON,
      -Number.MIN_VALUE,
      Number.MIN_VALUE,
      '0.5',
    ),
  },
  { weight: 1, arbitrary: junk },
);

const tagArb = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('alpha', 'beta', 'seed', "o'brien", '%_', '--') },
  { weight: 2, arbitrary: text },
  { weight: 1, arbitrary: junk },
);

const tagListArb = fc.oneof(
  { weight: 6, arbitrary: fc.array(tagArb, { maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Array.from({ length: 65 }, (_, i) => `t${i}`),
      Array.from({ length: 64 }, (_, i) => `t${i}`),
      ['x'.repeat(129)],
      ['x'.repeat(128)],
      ['__experience_plan__'],
      ['a', 'a', 'a'],
    ),
  },
  { weight: 1, arbitrary: junk },
);

const metadataKey = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      'toString',
      'valueOf',
      'hasOwnProperty',
      'polluted',
      '',
      ' ',
      'a.b',
      'a[0]',
      '$where',
      "'; --",
      '\u0000',
      '\uD800',
      '\u202E',
      'experience_plan',
    ),
  },
  { weight: 2, arbitrary: fc.string({ maxLength: 6 }) },
);

const metadataLeaf = fc.oneof(
  { weight: 4, arbitrary: text },
  { weight: 2, arbitrary: fc.double() },
  { weight: 2, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Number.NaN,
      Number.POSITIVE_INFINITY,
      -0,
      undefined,
      1n,
      new Date(START_MS),
    ),
  },
);

const metadataArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.object({
      key: metadataKey,
      values: [metadataLeaf],
      maxDepth: 3,
      maxKeys: 4,
      withNullPrototype: true,
    }),
  },
  { weight: 2, arbitrary: fc.constantFrom(...specialMetadata()) },
  { weight: 1, arbitrary: junk },
);

/** Keys no input accepts, a real own `__proto__` among them. */
const extraKeys: fc.Arbitrary<[string, unknown] | null> = fc.oneof(
  { weight: 7, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom(
        '__proto__',
        'constructor',
        'prototype',
        'agentId',
        'orgId',
        'id',
        'contentHash',
        'colour',
      ),
      fc.oneof(fc.constant({ polluted: true }), text, junk),
    ),
  },
);

/**
 * Inputs of a call: a third well-formed (`valid`), the rest a record of
 * optional, mostly hostile fields plus maybe one unknown key, or junk.
 */
function inputOf(
  valid: fc.Arbitrary<unknown>,
  fields: Record<string, fc.Arbitrary<unknown>>,
  requiredKeys: string[],
): fc.Arbitrary<unknown> {
  const record = fc
    .tuple(fc.record(fields, { requiredKeys }), extraKeys)
    .map(([value, extra]) =>
      extra === null ? value : withOwnKey(value as object, extra[0], extra[1]),
    );
  return fc.oneof(
    { weight: 6, arbitrary: valid },
    { weight: 10, arbitrary: record },
    { weight: 1, arbitrary: junk },
    { weight: 1, arbitrary: text },
  );
}

const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
// biome-ignore lint/suspicious/noControlCharactersInRegex: that is what it finds
const CONTROL = /[\u0000-\u001F\u007F]/;

const cleanPiece = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SQL) },
  { weight: 3, arbitrary: fc.constantFrom(...WORDS) },
  { weight: 1, arbitrary: fc.constantFrom('\u202E', '\u200F', '😀', 'e\u0301', 'ä', '\u00A0') },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }) },
);

/** Content every store must accept and return byte-for-byte: SQL metacharacters, RTL marks, any Unicode. */
const validContent = fc
  .tuple(fc.constantFrom(...WORDS), fc.array(cleanPiece, { maxLength: 6 }))
  .map(([word, pieces]) => [word, ...pieces].join(pieces.length % 2 === 0 ? ' ' : ''))
  .filter((value) => !LONE_SURROGATE.test(value) && !value.includes('\u0000'));

/** A tag, thread id or source type every store must accept. */
const validLabel = fc
  .array(cleanPiece, { minLength: 1, maxLength: 3 })
  .map((pieces) => pieces.join(''))
  .filter(
    (value) =>
      value.trim().length > 0 &&
      value.length <= 128 &&
      !CONTROL.test(value) &&
      !LONE_SURROGATE.test(value) &&
      !/^__.*__$/.test(value),
  );

const futureDate = fc
  .integer({ min: 1, max: 20 * 365 * 86_400_000 })
  .map((ms) => new Date(START_MS + ms));

const validUnit = fc.oneof(
  fc.double({ min: 0, max: 1, noNaN: true }),
  fc.constantFrom(-0, 0, 1, Number.MIN_VALUE),
);

const validMetadata = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.object({
      key: fc
        .oneof(
          fc.constantFrom('constructor', 'prototype', 'toString', 'polluted', 'a.b', '$where'),
          fc.constantFrom("'; --", '\u202E', '%_', '::text'),
          fc.string({ maxLength: 6 }),
        )
        .filter((key) => key !== '__proto__' && !key.includes('\u0000')),
      values: [
        fc.oneof(
          validContent,
          fc.integer(),
          fc.double({ noNaN: true, noDefaultInfinity: true }),
          fc.boolean(),
          fc.constant(null),
        ),
      ],
      maxDepth: 3,
      maxKeys: 4,
      withNullPrototype: true,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      JSON.parse('{"constructor": {"prototype": {"polluted": true}}}'),
      { prototype: { polluted: true } },
      { n: -0, m: [-0] },
      deepObject(14),
    ),
  },
);

const validRemember = fc.record(
  {
    content: validContent,
    memoryType: fc.constantFrom(...MEMORY_TYPES),
    scope: fc.constantFrom(...SCOPES),
    importance: validUnit,
    tags: fc.array(validLabel, { maxLength: 4 }),
    metadata: validMetadata,
    threadId: validLabel,
    sourceType: validLabel,
    expiresAt: futureDate,
  },
  { requiredKeys: ['content'] },
);

const validFilters = fc.record(
  {
    memoryTypes: fc.array(fc.constantFrom(...MEMORY_TYPES), { maxLength: 3 }),
    scopes: fc.array(fc.constantFrom(...SCOPES), { maxLength: 3 }),
    tagsAny: fc.array(validLabel, { maxLength: 3 }),
    tagsAll: fc.array(validLabel, { maxLength: 2 }),
    minImportance: validUnit,
    createdAfter: fc.date({ min: new Date(START_MS - 86_400_000), max: new Date(START_MS + 1) }),
    createdBefore: fc.date({ min: new Date(START_MS - 1), max: new Date(START_MS + 86_400_000) }),
    threadId: fc.oneof(fc.constantFrom('t1', 't2'), validLabel),
  },
  { requiredKeys: [] },
);

const rememberInputArb = inputOf(
  validRemember,
  {
    content: fc.oneof({ weight: 8, arbitrary: text }, { weight: 1, arbitrary: junk }),
    memoryType: mostly(fc.constantFrom(...MEMORY_TYPES)),
    scope: mostly(fc.constantFrom(...SCOPES)),
    importance: unitArb,
    tags: tagListArb,
    metadata: metadataArb,
    threadId: mostly(fc.constantFrom('t1', 't2', "t'3", 't--4')),
    sourceType: mostly(fc.constantFrom('chat', 'tool', '%')),
    expiresAt: dateArb,
  },
  ['content'],
);

const filtersArb = fc.oneof(
  { weight: 6, arbitrary: validFilters },
  {
    weight: 8,
    arbitrary: fc
      .tuple(
        fc.record(
          {
            memoryTypes: fc.oneof(fc.array(mostly(fc.constantFrom(...MEMORY_TYPES))), junk),
            scopes: fc.oneof(fc.array(mostly(fc.constantFrom(...SCOPES))), junk),
            tagsAny: fc.oneof(fc.array(tagArb, { maxLength: 3 }), junk),
            tagsAll: fc.oneof(fc.array(tagArb, { maxLength: 3 }), junk),
            minImportance: unitArb,
            createdAfter: dateArb,
            createdBefore: dateArb,
            threadId: mostly(fc.constantFrom('t1', 't2', "t'3")),
          },
          { requiredKeys: [] },
        ),
        extraKeys,
      )
      .map(([value, extra]) =>
        extra === null ? value : withOwnKey(value as object, extra[0], extra[1]),
      ),
  },
  { weight: 1, arbitrary: junk },
);

const STRATEGIES = ['lexical', 'semantic', 'hybrid', 'auto'] as const;
const FORGET_MODES = ['soft', 'hard', 'redact'] as const;

/** Whether a thrown error is acceptable: a MnemoError with one of `codes`. */
function describeError(error: unknown): string {
  if (MnemoError.isInstance(error)) return `MnemoError ${error.code}: ${error.message}`;
  if (error instanceof Error) return `${error.name}: ${error.message}\n${error.stack ?? ''}`;
  return `non-Error ${typeof error}: ${String(error)}`;
}

/** Readable form of a generated input for failure messages. */
function show(value: unknown): string {
  return fc.stringify(value).slice(0, 500);
}

export function fuzzSpec(t: TestApi, h: Harness): void {
  const { it, expect } = t;

  /** Everything a store holds that a call could change, read without going through the engine. */
  async function snapshot({ store, clock }: Fixture) {
    const now = clock.now();
    const list = (agentId: string) =>
      store.list({ visibility: { agentId, orgId: null, now }, filters: {}, includePlans: true });
    const records: MemoryRecord[] = [];
    for (;;) {
      const page = await store.scanRecords({ afterId: records.at(-1)?.id, limit: 500 });
      records.push(...page);
      if (page.length < 500) break;
    }
    const audit = [];
    for (;;) {
      const last = audit.at(-1);
      const page = await store.readAudit({
        ...(last ? { after: { chain: last.chain, seq: last.seq } } : {}),
        limit: 1000,
      });
      audit.push(...page);
      if (page.length < 1000) break;
    }
    return {
      a: await list('agent-a'),
      b: await list('agent-b'),
      records,
      grants: await store.listGrants(records.map((record) => record.id)),
      audit,
      heads: await store.auditHeads(),
    };
  }

  const lastSnapshot = new WeakMap<Fixture, Awaited<ReturnType<typeof snapshot>>>();

  /**
   * Runs `call`; a throw must be a MnemoError with one of `codes` and must
   * leave the store exactly as before. Returns the result, or undefined on a throw.
   */
  async function probe<T>(
    fixture: Fixture,
    label: string,
    input: unknown,
    codes: readonly ErrorCode[],
    call: () => Promise<T>,
  ): Promise<{ ok: true; value: T } | { ok: false }> {
    // A failed call leaves the store as it was, so its snapshot is the next call's "before".
    const before = lastSnapshot.get(fixture) ?? (await snapshot(fixture));
    lastSnapshot.delete(fixture);
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await call() };
    } catch (error) {
      outcome = { ok: false, error };
    }
    expect(({} as Record<string, unknown>).polluted, `${label} polluted Object.prototype`).toBe(
      undefined,
    );
    if (outcome.ok) return outcome;
    const { error } = outcome;
    const after = await snapshot(fixture);
    const expected = MnemoError.isInstance(error) && codes.includes(error.code);
    // Soft, so an unexpected error also reports whether the store changed.
    if (!expected) {
      expect.soft(after, `${label}(${show(input)}) changed the store`).toEqual(before);
    }
    expect(expected, `${label}(${show(input)}) threw ${describeError(error)}`).toBe(true);
    expect(after, `${label}(${show(input)}) changed the store`).toEqual(before);
    lastSnapshot.set(fixture, after);
    return { ok: false };
  }

  /** A store with records of both agents, a grant each way, and a plan. */
  async function seeded() {
    const fixture = await h.open({ embedder: createHashEmbedder(), experienceMemory: true });
    const a = fixture.engine.as('agent-a');
    const b = fixture.engine.as('agent-b');
    const ids: string[] = [];
    const add = async (handle: typeof a, input: Parameters<typeof a.remember>[0]) => {
      ids.push((await handle.remember(input)).id);
    };
    await add(a, { content: 'alpha private memory', tags: ['alpha'], threadId: 't1' });
    await add(a, { content: "shared o'brien -- memory", scope: 'shared', tags: ['seed'] });
    await add(a, { content: 'public beta memory', scope: 'public', importance: 0.9 });
    await add(b, { content: 'b shared gamma', scope: 'shared', threadId: 't2' });
    await add(b, { content: 'b private 100% _secret_', tags: ['beta'] });
    await add(b, { content: 'b global seed', scope: 'global', memoryType: 'semantic' });
    await a.share({ recordId: ids[1] as string, with: ['agent-b'], permission: 'read' });
    await b.share({ recordId: ids[3] as string, with: ['agent-a'], permission: 'write' });
    ids.push(
      (
        await planAccess(a).writePlan({
          query: 'alpha plan',
          payload: { tokens: ['alpha', 'plan'] },
          tokens: ['alpha', 'plan'],
          scope: 'shared',
        })
      ).id,
    );
    return { fixture, a, b, ids };
  }

  async function finish(fixture: Fixture) {
    const verification = await fixture.engine.verifyAudit();
    expect(verification.problems).toEqual([]);
    expect(verification.ok).toBe(true);
    expect((await fixture.engine.verifyRecords()).problems).toEqual([]);
    expect(({} as Record<string, unknown>).polluted).toBe(undefined);
    expect(Object.keys(Object.prototype)).toEqual([]);
  }

  const callerArb = fc.constantFrom('agent-a', 'agent-b');

  function idArb(ids: string[]) {
    return fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...ids) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('id-999999', 'id-000000', ' id-000001', 'ID-000001'),
      },
      { weight: 2, arbitrary: text },
      { weight: 1, arbitrary: junk },
    );
  }

  /** fast-check's options for `numRuns` generated inputs, counted for the reliability report. */
  function runs(numRuns: number) {
    tally({ fuzzRuns: numRuns });
    return { numRuns, seed: SEED };
  }

  it('remember: succeeds and stores content byte-for-byte, or fails with INVALID_INPUT and changes nothing', async () => {
    const { fixture } = await seeded();
    await fc.assert(
      fc.asyncProperty(callerArb, rememberInputArb, async (caller, input) => {
        const handle = fixture.engine.as(caller);
        const result = await probe(fixture, 'remember', input, ['INVALID_INPUT'], () =>
          handle.remember(input as never),
        );
        if (result.ok && !result.value.deduplicated) {
          const content = (input as { content: string }).content;
          expect((await handle.get(result.value.id)).content).toBe(content);
        }
      }),
      runs(40),
    );
    await finish(fixture);
  });

  it('rememberMany: all or nothing, INVALID_INPUT for any bad input', async () => {
    const { fixture } = await seeded();
    const inputs = fc.oneof(
      { weight: 6, arbitrary: fc.array(rememberInputArb, { maxLength: 4 }) },
      { weight: 1, arbitrary: junk },
    );
    await fc.assert(
      fc.asyncProperty(callerArb, inputs, async (caller, input) => {
        const handle = fixture.engine.as(caller);
        const result = await probe(fixture, 'rememberMany', input, ['INVALID_INPUT'], () =>
          handle.rememberMany(input as never),
        );
        if (!result.ok) return;
        const list = input as { content: string }[];
        expect(result.value).toHaveLength(list.length);
        for (const [index, item] of result.value.entries()) {
          if (item.deduplicated) continue;
          expect((await handle.get(item.id)).content).toBe(list[index]?.content);
        }
      }),
      runs(15),
    );
    await finish(fixture);
  });

  it('recall: succeeds or fails with INVALID_INPUT and changes nothing', async () => {
    const { fixture } = await seeded();
    const valid = fc.record(
      {
        query: validContent,
        limit: fc.integer({ min: 1, max: 100 }),
        strategy: fc.constantFrom(...STRATEGIES),
        filters: validFilters,
        explain: fc.boolean(),
      },
      { requiredKeys: ['query'] },
    );
    const input = inputOf(
      valid,
      {
        query: fc.oneof({ weight: 8, arbitrary: text }, { weight: 1, arbitrary: junk }),
        limit: fc.oneof(
          { weight: 4, arbitrary: fc.integer({ min: -2, max: 110 }) },
          { weight: 1, arbitrary: fc.double() },
          { weight: 1, arbitrary: junk },
        ),
        strategy: mostly(fc.constantFrom(...STRATEGIES)),
        filters: filtersArb,
        explain: fc.oneof(fc.boolean(), junk),
      },
      ['query'],
    );
    await fc.assert(
      fc.asyncProperty(callerArb, input, async (caller, value) => {
        const handle = fixture.engine.as(caller);
        const result = await probe(fixture, 'recall', value, ['INVALID_INPUT'], () =>
          handle.recall(value as never),
        );
        if (result.ok) {
          for (const hit of result.value.hits) expect(Number.isFinite(hit.score)).toBe(true);
        }
      }),
      runs(30),
    );
    await finish(fixture);
  });

  it('get and getMany: succeed or fail with INVALID_INPUT / NOT_FOUND and change nothing', async () => {
    const { fixture, ids } = await seeded();
    const ids$ = idArb(ids);
    const many = fc.oneof(
      { weight: 6, arbitrary: fc.array(ids$, { maxLength: 5 }) },
      { weight: 1, arbitrary: junk },
      { weight: 1, arbitrary: text },
    );
    await fc.assert(
      fc.asyncProperty(callerArb, ids$, many, async (caller, id, list) => {
        const handle = fixture.engine.as(caller);
        const one = await probe(fixture, 'get', id, ['INVALID_INPUT', 'NOT_FOUND'], () =>
          handle.get(id as never),
        );
        if (one.ok) expect(one.value.id).toBe(id);
        const all = await probe(fixture, 'getMany', list, ['INVALID_INPUT'], () =>
          handle.getMany(list as never),
        );
        if (all.ok) {
          for (const record of all.value) expect(list as unknown[]).toContain(record.id);
        }
      }),
      runs(15),
    );
    await finish(fixture);
  });

  it('forget: succeeds or fails with INVALID_INPUT / NOT_FOUND / PERMISSION_DENIED and changes nothing', async () => {
    const { fixture, ids } = await seeded();
    const mode = fc.constantFrom(...FORGET_MODES);
    const valid = fc.oneof(
      fc.record(
        { ids: fc.array(fc.constantFrom(...ids), { minLength: 1, maxLength: 3 }), mode },
        { requiredKeys: ['ids'] },
      ),
      fc.record(
        {
          filters: validFilters.filter((filters) => Object.keys(filters).length > 0),
          mode,
        },
        { requiredKeys: ['filters'] },
      ),
    );
    const input = inputOf(
      valid,
      {
        ids: fc.oneof(
          { weight: 6, arbitrary: fc.array(idArb(ids), { maxLength: 3 }) },
          { weight: 1, arbitrary: junk },
        ),
        filters: filtersArb,
        mode: mostly(fc.constantFrom(...FORGET_MODES)),
      },
      [],
    );
    await fc.assert(
      fc.asyncProperty(callerArb, input, async (caller, value) => {
        const handle = fixture.engine.as(caller);
        await probe(
          fixture,
          'forget',
          value,
          ['INVALID_INPUT', 'NOT_FOUND', 'PERMISSION_DENIED'],
          () => handle.forget(value as never),
        );
      }),
      runs(30),
    );
    await finish(fixture);
  });

  it('share: succeeds or fails with INVALID_INPUT / NOT_FOUND / PERMISSION_DENIED and changes nothing', async () => {
    const { fixture, ids } = await seeded();
    const agent = mostly(fc.constantFrom('agent-a', 'agent-b', 'agent-c', 'agent.d_9'));
    const valid = fc.record(
      {
        recordId: fc.constantFrom(...ids),
        with: fc.array(fc.constantFrom('agent-a', 'agent-b', 'agent-c', 'agent.d_9'), {
          minLength: 1,
          maxLength: 3,
        }),
        permission: fc.constantFrom(...PERMISSIONS),
        expiresAt: futureDate,
      },
      { requiredKeys: ['recordId', 'with'] },
    );
    const input = inputOf(
      valid,
      {
        recordId: idArb(ids),
        with: fc.oneof(
          { weight: 6, arbitrary: fc.array(agent, { maxLength: 3 }) },
          {
            weight: 1,
            arbitrary: fc.constant(Array.from({ length: 65 }, (_, i) => `agent-${i}`)),
          },
          { weight: 1, arbitrary: junk },
        ),
        permission: mostly(fc.constantFrom(...PERMISSIONS)),
        expiresAt: dateArb,
      },
      ['recordId', 'with'],
    );
    await fc.assert(
      fc.asyncProperty(callerArb, input, async (caller, value) => {
        const handle = fixture.engine.as(caller);
        await probe(
          fixture,
          'share',
          value,
          ['INVALID_INPUT', 'NOT_FOUND', 'PERMISSION_DENIED'],
          () => handle.share(value as never),
        );
      }),
      runs(30),
    );
    await finish(fixture);
  });

  it('engine.as: returns a handle or throws INVALID_INPUT', async () => {
    const { engine } = await h.open();
    const id = fc.oneof(
      fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/),
      text,
      junk,
      fc.constant('x'.repeat(257)),
    );
    const options = fc.oneof(
      fc.constant(undefined),
      fc.record({ orgId: fc.oneof(id, fc.constant(null)) }, { requiredKeys: [] }),
      junk,
    );
    fc.assert(
      fc.property(id, options, (agentId, opts) => {
        try {
          engine.as(agentId as never, opts as never);
        } catch (error) {
          expect(
            MnemoError.hasCode(error, 'INVALID_INPUT'),
            `as(${show(agentId)}, ${show(opts)}) threw ${describeError(error)}`,
          ).toBe(true);
        }
      }),
      runs(300),
    );
  });

  it('very long content: up to the 1 MiB limit is stored byte-for-byte, past it is INVALID_INPUT', async () => {
    const { fixture } = await seeded();
    const a = fixture.engine.as('agent-a');
    const sql = `${SQL.join(' ')} \u202E `;
    const fill = (unit: string, bytes: number) => {
      const body = unit.repeat(Math.floor(bytes / Buffer.byteLength(unit, 'utf8')));
      return body + 'x'.repeat(bytes - Buffer.byteLength(body, 'utf8'));
    };
    // Failures first: snapshots stay small until the 1 MiB records exist.
    const rejected: [string, string][] = [
      ['1 MiB + 1 byte', 'y'.repeat(MIB + 1)],
      ['1 MiB of 4-byte characters + 1', `${'😀'.repeat(MIB / 4)}z`],
      ['1 MiB with a trailing NUL', `${'w'.repeat(MIB - 1)}\u0000`],
      ['1 MiB with a lone surrogate', `${'v'.repeat(MIB / 2)}\uD800${'v'.repeat(MIB / 2 - 3)}`],
    ];
    for (const [label, content] of rejected) {
      const result = await probe(fixture, `remember ${label}`, label, ['INVALID_INPUT'], () =>
        a.remember({ content, scope: 'shared' }),
      );
      expect({ label, ok: result.ok }).toEqual({ label, ok: false });
    }
    const many = await probe(fixture, 'rememberMany long', 'long', ['INVALID_INPUT'], () =>
      a.rememberMany([{ content: fill(`'--${sql}`, MIB - 7) }, { content: 'q'.repeat(MIB + 1) }]),
    );
    expect(many.ok).toBe(false);
    const queries: [string, string, boolean][] = [
      ['1 MiB + 1 query', 'x'.repeat(MIB + 1), false],
      ['64 KiB query of SQL metacharacters', fill(`${sql} alpha `, 64 * 1024), true],
      ['1 MiB query of x', 'x'.repeat(MIB), true],
    ];
    for (const [label, query, ok] of queries) {
      const result = await probe(fixture, `recall ${label}`, label, ['INVALID_INPUT'], () =>
        a.recall({ query, strategy: 'lexical' }),
      );
      expect({ label, ok: result.ok }).toEqual({ label, ok });
    }
    const accepted: [string, string][] = [
      ['1 MiB of x', 'x'.repeat(MIB)],
      ['1 MiB of SQL metacharacters', fill(sql, MIB)],
      ['1 MiB of 4-byte characters', '😀'.repeat(MIB / 4)],
      // One incompressible 3000-character word, as in a pasted hash or base64 blob.
      ['a 3000-character token', `blob ${token(3000)} end`],
    ];
    // Every case runs, so a failure names all the contents a store cannot hold.
    const failures: string[] = [];
    for (const [label, content] of accepted) {
      try {
        const result = await probe(fixture, `remember ${label}`, label, ['INVALID_INPUT'], () =>
          a.remember({ content, scope: 'shared' }),
        );
        expect({ label, ok: result.ok }).toEqual({ label, ok: true });
        if (result.ok) {
          expect(result.value.deduplicated).toBe(false);
          const stored = await a.get(result.value.id);
          expect(stored.content === content, label).toBe(true);
        }
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
      }
    }
    expect(failures).toEqual([]);
    await finish(fixture);
  });
}
