import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FormatError,
  loadLocomoFile,
  normalizeDiaId,
  parseLocomo,
  sanitizeAgentId,
  turnContent,
} from '../src/recall/loader.js';
import { UsageError } from '../src/shared/errors.js';

const fixture = fileURLToPath(new URL('fixtures/locomo-tiny.json', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'bench-loader-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('the LoCoMo loader on the fixture', () => {
  it('reads both conversations with sanitized agent ids', async () => {
    const { conversations } = await loadLocomoFile(fixture);
    expect(conversations.map((c) => [c.sampleId, c.agentId, c.turns.length])).toEqual([
      ['conv A/1', 'conv_A_1', 12],
      ['conv-B', 'conv-B', 3],
    ]);
  });

  it('builds each turn: speaker, text, the image caption; session number and date', async () => {
    const [a, b] = (await loadLocomoFile(fixture)).conversations;
    expect(a?.turns[2]).toEqual({
      diaId: 'D1:3',
      session: 1,
      date: '1:00 pm on 1 May, 2023',
      speaker: 'Alice',
      content: 'Alice: Biscuit is a beagle, here he is. [image: a photo of a small dog on a sofa]',
    });
    expect(a?.turns[4]).toEqual({
      diaId: 'D2:1',
      session: 2,
      date: '9:30 am on 8 May, 2023',
      speaker: 'Alice',
      content: 'Alice: I ran the Boston marathon on Sunday.',
    });
    expect(a?.turns.map((t) => t.diaId)).toEqual([
      'D1:1',
      'D1:2',
      'D1:3',
      'D1:4',
      'D2:1',
      'D2:2',
      'D2:3',
      'D2:4',
      'D2:5',
      'D2:6',
      'D2:7',
      'D2:8',
    ]);
    expect(b?.turns[1]?.content).toBe('Dan: I only like chess. [image: a chess board]');
  });

  it('keeps categories 1-4 with their evidence mapped to turns; leaves out category 5 and questions without evidence', async () => {
    const { conversations } = await loadLocomoFile(fixture);
    expect(conversations[0]?.questions).toEqual([
      { question: 'What breed of dog does Alice have?', category: 4, evidence: ['D1:3'] },
      // "D1:4; D2:2" is one entry naming two turns
      { question: 'What does Bob do with the violin?', category: 1, evidence: ['D1:4', 'D2:2'] },
      // "D:2:1" is repaired
      { question: 'When did Alice run the marathon?', category: 2, evidence: ['D2:1'] },
      // "D9:9" names no turn of the conversation
      { question: 'Which mountain might Alice climb?', category: 3, evidence: ['D2:3'] },
      { question: 'What is the name of the puppy?', category: 4, evidence: ['D1:1'] },
      { question: 'Where does the kayak live?', category: 4, evidence: ['D2:8'] },
    ]);
    expect(conversations[1]?.questions.map((q) => [q.category, q.evidence])).toEqual([
      [2, ['D1:3']],
      [1, ['D1:2']],
    ]);
  });

  it('counts what it left out and repaired', async () => {
    const { stats } = await loadLocomoFile(fixture);
    expect(stats).toEqual({
      samples: 2,
      questionsInFile: 10,
      excluded: { adversarial: 1, otherCategory: 0, noEvidence: 1, blankQuestion: 0 },
      evidence: { repaired: 3, dropped: 1 },
    });
  });
});

describe('loader helpers', () => {
  it('normalizes dia_ids', () => {
    expect(normalizeDiaId('D1:3')).toBe('D1:3');
    expect(normalizeDiaId('D:11:26')).toBe('D11:26');
    expect(normalizeDiaId(' D30:05 ')).toBe('D30:5');
    expect(normalizeDiaId('d2:1')).toBe('D2:1');
    expect(normalizeDiaId('D')).toBeNull();
    expect(normalizeDiaId('D8:6; D9:17')).toBeNull();
  });

  it('builds turn content and agent ids', () => {
    expect(turnContent('Jon', 'Hi!', null)).toBe('Jon: Hi!');
    expect(turnContent('Jon', 'Look', 'a cat')).toBe('Jon: Look [image: a cat]');
    expect(sanitizeAgentId('conv-26')).toBe('conv-26');
    expect(sanitizeAgentId('conv 1/é#x')).toBe('conv_1___x');
    expect(sanitizeAgentId('a'.repeat(300))).toHaveLength(256);
  });

  it('gives samples without an id, or with colliding ids, distinct agents', () => {
    const turn = { speaker: 'A', dia_id: 'D1:1', text: 'hello' };
    const sample = (id?: string) => ({
      ...(id === undefined ? {} : { sample_id: id }),
      conversation: { session_1: [turn] },
      qa: [],
    });
    const { conversations } = parseLocomo([sample('x y'), sample('x_y'), sample(), sample('')]);
    expect(conversations.map((c) => c.agentId)).toEqual(['x_y', 'x_y-2', 'sample-3', 'sample-4']);
  });

  it('sorts sessions by number and tolerates a missing date', () => {
    const { conversations } = parseLocomo([
      {
        conversation: {
          session_10: [{ speaker: 'A', dia_id: 'D10:1', text: 'late' }],
          session_2: [{ speaker: 'B', dia_id: 'D2:1', text: 'early' }],
          session_2_date_time: 'today',
        },
        qa: [{ question: 'q?', answer: 'a', evidence: ['D10:1'], category: 7 }],
      },
    ]);
    expect(conversations[0]?.turns.map((t) => [t.diaId, t.session, t.date])).toEqual([
      ['D2:1', 2, 'today'],
      ['D10:1', 10, null],
    ]);
  });

  it('rejects what is not LoCoMo with FormatError', () => {
    const ok = {
      conversation: { session_1: [{ speaker: 'A', dia_id: 'D1:1', text: 't' }] },
      qa: [],
    };
    expect(() => parseLocomo({})).toThrow(FormatError);
    expect(() => parseLocomo([])).toThrow('empty');
    expect(() => parseLocomo([{ qa: [] }])).toThrow(
      'sample 1 (sample-1): conversation must be an object',
    );
    expect(() => parseLocomo([{ conversation: { speaker_a: 'A' }, qa: [] }])).toThrow(
      'no session_N',
    );
    expect(() => parseLocomo([{ ...ok, qa: undefined }])).toThrow('qa must be an array');
    expect(() =>
      parseLocomo([{ conversation: { session_1: [{ speaker: 'A', text: 't' }] }, qa: [] }]),
    ).toThrow('session_1[0]: dia_id must be a non-blank string');
    expect(() =>
      parseLocomo([
        {
          conversation: {
            session_1: [
              { speaker: 'A', dia_id: 'D1:1', text: 't' },
              { speaker: 'B', dia_id: 'D:1:1', text: 'u' },
            ],
          },
          qa: [],
        },
      ]),
    ).toThrow('dia_id D:1:1 appears twice');
  });
});

describe('loadLocomoFile errors', () => {
  it('reports a missing file, a directory, bad JSON and a wrong shape as UsageError', async () => {
    const bad = join(scratch, 'bad.json');
    writeFileSync(bad, '{ not json');
    const shape = join(scratch, 'shape.json');
    writeFileSync(shape, '{"qa": []}');
    await expect(loadLocomoFile(join(scratch, 'missing.json'))).rejects.toThrow(
      `--data: cannot read ${join(scratch, 'missing.json')}: no such file`,
    );
    await expect(loadLocomoFile(scratch)).rejects.toThrow('it is a directory');
    await expect(loadLocomoFile(bad)).rejects.toThrow(`--data: ${bad} is not valid JSON`);
    await expect(loadLocomoFile(shape)).rejects.toThrow(
      `--data: ${shape} is not in the LoCoMo format: the top level must be an array of samples`,
    );
    await expect(loadLocomoFile(shape)).rejects.toBeInstanceOf(UsageError);
  });
});
