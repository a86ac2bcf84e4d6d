import { parseArgs } from 'node:util';
import { COMMON_OPTIONS, noPositionals, storeOf, usageErrors } from '../args.js';
import { type CliIo, json, write } from '../output.js';
import { withEngine } from '../store-spec.js';

/**
 * `mnemo purge-expired`: deletes for good every record whose expiry has passed (all owners),
 * each owner's chain recording it as a hard forget; see `Engine.purgeExpired`.
 */
export async function purgeExpiredCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = usageErrors('purge-expired', () =>
    parseArgs({
      args: [...argv],
      options: { ...COMMON_OPTIONS },
      strict: true,
      allowPositionals: true,
    }),
  );
  noPositionals('purge-expired', positionals);
  const { purged } = await withEngine(storeOf(values), { existing: true }, (engine) =>
    engine.purgeExpired(),
  );
  await write(
    io.stdout,
    values.json === true
      ? json({ purged })
      : `purged ${purged} expired record${purged === 1 ? '' : 's'}\n`,
  );
  return 0;
}
