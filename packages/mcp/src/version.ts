import { readFileSync } from 'node:fs';

/** The version of this package (reported to MCP clients and by `mnemo --version`). */
export const VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
