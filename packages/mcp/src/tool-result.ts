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

/** A successful result: the value as JSON text and as `structuredContent`. */
export function okResult(value: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}

const snake = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

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
