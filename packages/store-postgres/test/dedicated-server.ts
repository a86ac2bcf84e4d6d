import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL server of the test's own, for tests that stop and restart it
 * (the shared test server must stay up for the other test files). Built from
 * the installed server binaries: `MNEMO_TEST_PG_BINDIR`, else the highest
 * `/usr/lib/postgresql/<major>/bin` (what `.ci/postgres.sh` installs).
 */
export interface DedicatedServer {
  url: string;
  /** The data folder (owned by the user the server runs as). */
  data: string;
  /** `pg_ctl stop`: `fast` disconnects clients and shuts down cleanly, `immediate` is a crash. */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops it and removes its data. */
  destroy(): Promise<void>;
  /**
   * A hot standby of it (`pg_basebackup -R`), started on a port of its own;
   * `destroy` stops the standby and removes its data too.
   */
  startStandby(): Promise<{ url: string }>;
}

/** The folder holding `initdb` and `pg_ctl`, or null when no server is installed. */
export function postgresBinDir(): string | null {
  const fromEnv = process.env.MNEMO_TEST_PG_BINDIR;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return null;
  const majors = readdirSync(base)
    .filter((name) => /^\d+$/.test(name) && existsSync(join(base, name, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] === undefined ? null : join(base, majors[0], 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

export async function startDedicatedServer(bin: string): Promise<DedicatedServer> {
  const dir = mkdtempSync('/tmp/mnemo-pg-faults-');
  // The server refuses to run as root: under root (CI) it runs as the postgres user.
  const asRoot = process.getuid?.() === 0;
  const exec = (program: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args])
      : run(join(bin, program), args);
  const password = randomBytes(12).toString('hex');
  writeFileSync(join(dir, 'pwfile'), `${password}\n`, { mode: 0o600 });
  if (asRoot) {
    const ids = await run('id', ['-u', 'postgres']);
    const groups = await run('id', ['-g', 'postgres']);
    const [uid, gid] = [Number(ids.stdout.trim()), Number(groups.stdout.trim())];
    chownSync(dir, uid, gid);
    chownSync(join(dir, 'pwfile'), uid, gid);
  }
  const data = join(dir, 'data');
  await exec('initdb', [
    '-D',
    data,
    '-U',
    'postgres',
    `--pwfile=${join(dir, 'pwfile')}`,
    '--auth-host=scram-sha-256',
    '--auth-local=peer',
    '-E',
    'UTF8',
    '--no-instructions',
    '--no-sync',
  ]);
  const port = await freePort();
  const options = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir}`;
  const start = async () => {
    await exec('pg_ctl', [
      '-D',
      data,
      '-l',
      join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      options,
      'start',
    ]);
  };
  const stop = async (mode: 'fast' | 'immediate') => {
    await exec('pg_ctl', ['-D', data, '-w', '-t', '60', '-m', mode, 'stop']);
  };
  await start();
  const standbyData = join(dir, 'standby');
  let standby = false;
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    data,
    stop,
    start,
    destroy: async () => {
      if (standby) {
        await exec('pg_ctl', ['-D', standbyData, '-w', '-m', 'immediate', 'stop']).catch(
          () => undefined,
        );
      }
      await stop('immediate').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
    startStandby: async () => {
      // The password goes in a file of the server user's (a .pgpass), not on a command line.
      const pgpass = join(dir, 'pgpass');
      writeFileSync(pgpass, `127.0.0.1:${port}:*:postgres:${password}\n`, { mode: 0o600 });
      if (asRoot) chownSync(pgpass, ...(await ownerOf(dir)));
      // A fast checkpoint, not the next scheduled one; no fsync of a throwaway copy.
      const backup = ['-D', standbyData, '-R', '-c', 'fast', '-N', '-h', '127.0.0.1'];
      backup.push('-p', String(port), '-U');
      await (asRoot
        ? run('runuser', [
            '-u',
            'postgres',
            '--',
            'env',
            `PGPASSFILE=${pgpass}`,
            join(bin, 'pg_basebackup'),
            ...backup,
            'postgres',
          ])
        : run(join(bin, 'pg_basebackup'), [...backup, 'postgres'], {
            env: { ...process.env, PGPASSFILE: pgpass },
          }));
      const standbyPort = await freePort();
      await exec('pg_ctl', [
        '-D',
        standbyData,
        '-l',
        join(dir, 'standby.log'),
        '-w',
        '-t',
        '60',
        '-o',
        `-p ${standbyPort} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir}`,
        'start',
      ]);
      standby = true;
      return { url: `postgres://postgres:${password}@127.0.0.1:${standbyPort}/postgres` };
    },
  };
}

/** The uid and gid of a path's owner. */
async function ownerOf(path: string): Promise<[number, number]> {
  const { stdout } = await run('stat', ['-c', '%u %g', path]);
  const [uid, gid] = stdout.trim().split(' ').map(Number);
  return [uid as number, gid as number];
}
