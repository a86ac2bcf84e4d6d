import { MnemoError } from '@mnemo/core';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** What an error result's text holds (as JSON). */
export interface ToolErrorBody {
  error: {
    /** A `MnemoError` code, or `INTERNAL` for anything unexpected. */
    code: string;
    message: string;
    /** The offending input field (snake_case), when the engine named one. */
    field?: string;
  };
}

/**
 * The longest JSON text a result may hold, in characters. The SDK sends the
 * value twice (the text, escaped once more, and `structuredContent`) in one
 * message, which must stay below V8's longest string (2^29 − 24 characters):
 * at most three times this, when every character of the text is escaped.
 */
export const MAX_RESULT_CHARS = 32 * 1024 * 1024;

/**
 * A successful result: the value as JSON text and as `structuredContent`; or,
 * when the text would be longer than `MAX_RESULT_CHARS`, an `INVALID_INPUT`
 * error result (an answer that large could not be sent at all).
 */
export function okResult(value: Record<string, unknown>): CallToolResult {
  let text: string | null = null;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
  }
  if (text === null || text.length > MAX_RESULT_CHARS) {
    return errorResult(
      new MnemoError(
        'INVALID_INPUT',
        `the answer would be more than ${MAX_RESULT_CHARS} characters of JSON, too large to send: ask for fewer or smaller records (a lower limit)`,
      ),
    );
  }
  return { content: [{ type: 'text', text }], structuredContent: value };
}

/**
 * The engine's field path in the tools' snake_case. Below `metadata` the path is the
 * caller's own keys (`metadata.sourceInfo`), named as the client wrote them.
 */
function snake(field: string): string {
  if (/^metadata(?=$|[.[ ])/.test(field)) return field;
  return field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/**
 * An error as a tool result (`isError: true`), never a thrown error: a `MnemoError` keeps its
 * code and message, with the engine's camelCase field names turned into the tools' snake_case;
 * anything else is `INTERNAL` with a fixed message (its details go to `onInternalError`, not
 * to the client).
 */
export function errorResult(error: unknown): CallToolResult {
  let body: ToolErrorBody;
  if (MnemoError.isInstance(error)) {
    const field = typeof error.details.field === 'string' ? error.details.field : undefined;
    const message =
      field !== undefined && error.message.startsWith(`${field}:`)
        ? `${snake(field)}${error.message.slice(field.length)}`
        : error.message;
    body = {
      error: {
        code: error.code,
        message,
        ...(field === undefined ? {} : { field: snake(field) }),
      },
    };
  } else {
    body = { error: { code: 'INTERNAL', message: 'internal error; see the server log' } };
  }
  return { content: [{ type: 'text', text: JSON.stringify(body) }], isError: true };
}
