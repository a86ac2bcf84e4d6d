import { UsageError } from '../shared/errors.js';
import { readDataFile } from '../shared/json-file.js';

/**
 * Loading a file in the LoCoMo format (Maharana et al., ACL 2024): a JSON
 * array of samples, each `{ sample_id, conversation, qa }`, where
 * `conversation` holds `speaker_a`, `speaker_b`, and for each session N an
 * array `session_N` of turns `{ speaker, dia_id, text, img_url?, blip_caption? }`
 * and a string `session_N_date_time`; `qa` is `[{ question, answer, evidence, category }]`.
 */

/** One dialogue turn, as it is stored. */
export interface Turn {
  /** The turn's id, `D<session>:<n>` (normalized like evidence ids). */
  diaId: string;
  session: number;
  /** The session's `session_N_date_time`, or null when the file has none. */
  date: string | null;
  speaker: string;
  /** `${speaker}: ${text}`, then ` [image: ${blip_caption}]` when the turn shares an image. */
  content: string;
}

/** A question that is scored. */
export interface Question {
  question: string;
  /** 1..4 (5, adversarial, is never scored). */
  category: number;
  /** The gold turns: distinct ids of turns of this conversation, in the file's order. */
  evidence: string[];
}

export interface Conversation {
  sampleId: string;
  /** The mnemo agent the conversation is stored as: the sample id made safe for `[A-Za-z0-9._-]{1,256}`. */
  agentId: string;
  turns: Turn[];
  questions: Question[];
}

/** What the loader left out or repaired, over the whole file. */
export interface LoadStats {
  samples: number;
  /** Questions in `qa`, all categories. */
  questionsInFile: number;
  excluded: {
    /** Category 5: the answer is not in the conversation. */
    adversarial: number;
    /** A category outside 1..5. */
    otherCategory: number;
    /** Categories 1..4 without a single evidence id that names a turn of the conversation. */
    noEvidence: number;
    /** A question that is not a non-blank string. */
    blankQuestion: number;
  };
  evidence: {
    /** Evidence ids that needed repair before they matched a turn: `D:11:26`, `D8:6; D9:17` (one entry, two ids), `D3:05`. */
    repaired: number;
    /** Evidence ids of category 1–4 questions that name no turn (`D`, or a turn the conversation lacks); left out of the gold set. */
    dropped: number;
  };
}

export interface LocomoData {
  conversations: Conversation[];
  stats: LoadStats;
}

const SESSION_KEY = /^session_(\d+)$/;
const DIA_ID = /^D:?(\d+):(\d+)$/i;
const AGENT_UNSAFE = /[^A-Za-z0-9._-]/g;

/** Where to get LoCoMo, for the message of a data file that is not there. */
export const LOCOMO_SOURCE =
  'get LoCoMo from https://github.com/snap-research/locomo (data/locomo10.json, CC BY-NC 4.0) and pass its path with --data';

/** Reads and parses `path`; an unreadable, non-JSON or malformed file is a `UsageError`. */
export async function loadLocomoFile(path: string): Promise<LocomoData> {
  const json = await readDataFile(path, LOCOMO_SOURCE);
  try {
    return parseLocomo(json);
  } catch (error) {
    if (error instanceof FormatError) {
      throw new UsageError(`--data: ${path} is not in the LoCoMo format: ${error.message}`);
    }
    throw error;
  }
}

/** A file that is JSON but not LoCoMo. */
export class FormatError extends Error {
  override readonly name = 'FormatError';
}

/** The canonical form of a dia_id (`D:11:26` → `D11:26`, `D3:05` → `D3:5`), or null if it is not one. */
export function normalizeDiaId(text: string): string | null {
  const match = DIA_ID.exec(text.trim());
  if (match === null) return null;
  return `D${Number(match[1])}:${Number(match[2])}`;
}

/** `${speaker}: ${text}`, plus ` [image: ${caption}]` when there is a caption. */
export function turnContent(speaker: string, text: string, caption: string | null): string {
  return caption === null ? `${speaker}: ${text}` : `${speaker}: ${text} [image: ${caption}]`;
}

/** `sampleId` with every character outside `[A-Za-z0-9._-]` replaced by `_`, at most 256 long. */
export function sanitizeAgentId(sampleId: string): string {
  return sampleId.replace(AGENT_UNSAFE, '_').slice(0, 256);
}

/** Parses the LoCoMo JSON value; throws `FormatError` naming the first thing that does not fit. */
export function parseLocomo(json: unknown): LocomoData {
  if (!Array.isArray(json)) throw new FormatError('the top level must be an array of samples');
  if (json.length === 0) throw new FormatError('the array of samples is empty');
  const stats: LoadStats = {
    samples: json.length,
    questionsInFile: 0,
    excluded: { adversarial: 0, otherCategory: 0, noEvidence: 0, blankQuestion: 0 },
    evidence: { repaired: 0, dropped: 0 },
  };
  const agents = new Set<string>();
  const conversations = json.map((sample, index) => {
    const where = `sample ${index + 1}`;
    if (!isObject(sample)) throw new FormatError(`${where} is not an object`);
    const sampleId =
      typeof sample.sample_id === 'string' && sample.sample_id.trim() !== ''
        ? sample.sample_id
        : `sample-${index + 1}`;
    const label = `${where} (${sampleId})`;
    const turns = parseTurns(sample.conversation, label);
    const questions = parseQuestions(sample.qa, turns, label, stats);
    return { sampleId, agentId: uniqueAgent(sampleId, index, agents), turns, questions };
  });
  return { conversations, stats };
}

function uniqueAgent(sampleId: string, index: number, taken: Set<string>): string {
  const base = sanitizeAgentId(sampleId) || `sample-${index + 1}`;
  let agent = base;
  for (let n = 2; taken.has(agent); n += 1) agent = `${base.slice(0, 240)}-${n}`;
  taken.add(agent);
  return agent;
}

function parseTurns(conversation: unknown, label: string): Turn[] {
  if (!isObject(conversation)) throw new FormatError(`${label}: conversation must be an object`);
  const sessions = Object.keys(conversation)
    .flatMap((key) => {
      const match = SESSION_KEY.exec(key);
      return match === null ? [] : [{ key, n: Number(match[1]) }];
    })
    .sort((a, b) => a.n - b.n);
  if (sessions.length === 0) throw new FormatError(`${label}: conversation has no session_N`);
  const turns: Turn[] = [];
  const seen = new Set<string>();
  for (const { key, n } of sessions) {
    const list = conversation[key];
    if (!Array.isArray(list)) throw new FormatError(`${label}: ${key} must be an array of turns`);
    const dateValue = conversation[`${key}_date_time`];
    const date = typeof dateValue === 'string' ? dateValue : null;
    list.forEach((turn, t) => {
      const where = `${label}: ${key}[${t}]`;
      if (!isObject(turn)) throw new FormatError(`${where} is not an object`);
      const { speaker, dia_id: rawId, text, blip_caption: caption } = turn;
      if (typeof speaker !== 'string' || speaker.trim() === '')
        throw new FormatError(`${where}: speaker must be a non-blank string`);
      if (typeof rawId !== 'string' || rawId.trim() === '')
        throw new FormatError(`${where}: dia_id must be a non-blank string`);
      if (typeof text !== 'string') throw new FormatError(`${where}: text must be a string`);
      const diaId = normalizeDiaId(rawId) ?? rawId.trim();
      if (seen.has(diaId)) throw new FormatError(`${where}: dia_id ${rawId} appears twice`);
      seen.add(diaId);
      const hasCaption = typeof caption === 'string' && caption.trim() !== '';
      turns.push({
        diaId,
        session: n,
        date,
        speaker,
        content: turnContent(speaker, text, hasCaption ? caption : null),
      });
    });
  }
  if (turns.length === 0) throw new FormatError(`${label}: conversation has no turns`);
  return turns;
}

function parseQuestions(qa: unknown, turns: Turn[], label: string, stats: LoadStats): Question[] {
  if (!Array.isArray(qa)) throw new FormatError(`${label}: qa must be an array`);
  const known = new Set(turns.map((turn) => turn.diaId));
  const questions: Question[] = [];
  qa.forEach((item, index) => {
    if (!isObject(item)) throw new FormatError(`${label}: qa[${index}] is not an object`);
    stats.questionsInFile += 1;
    const { category } = item;
    if (category === 5) {
      stats.excluded.adversarial += 1;
      return;
    }
    if (category !== 1 && category !== 2 && category !== 3 && category !== 4) {
      stats.excluded.otherCategory += 1;
      return;
    }
    if (typeof item.question !== 'string' || item.question.trim() === '') {
      stats.excluded.blankQuestion += 1;
      return;
    }
    const evidence = goldTurns(item.evidence, known, stats);
    if (evidence.length === 0) {
      stats.excluded.noEvidence += 1;
      return;
    }
    questions.push({ question: item.question, category, evidence });
  });
  return questions;
}

/** The distinct turn ids an `evidence` value names, repairing odd spellings and dropping the rest. */
function goldTurns(evidence: unknown, known: ReadonlySet<string>, stats: LoadStats): string[] {
  const gold: string[] = [];
  const entries = Array.isArray(evidence) ? evidence : [];
  for (const entry of entries) {
    if (typeof entry !== 'string') {
      stats.evidence.dropped += 1;
      continue;
    }
    const pieces = entry.split(/[;,\s]+/).filter((piece) => piece !== '');
    for (const piece of pieces) {
      const id = known.has(piece) ? piece : normalizeDiaId(piece);
      if (id === null || !known.has(id)) {
        stats.evidence.dropped += 1;
        continue;
      }
      if (id !== piece || pieces.length > 1) stats.evidence.repaired += 1;
      if (!gold.includes(id)) gold.push(id);
    }
  }
  return gold;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
