// Pick-and-choose install, as a user would do it: pack the three library packages the way
// they would be published, install only those tarballs with npm into an empty project outside
// the workspace, then compile the README's quick start strictly against the shipped .d.ts
// files and run it. This catches what in-workspace tests cannot: a missing file in `files`,
// a `workspace:` range left in a published manifest, a type that only resolves through the
// workspace, or a README example that no longer matches the API.
import { execFile } from 'node:child_process';
import {
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '..');
const packages = ['core', 'experience', 'store-duckdb'] as const;
const execFileAsync = promisify(execFile);

// Child processes get the environment of a user's shell: drop the npm_*/pnpm_* variables that
// `pnpm test` sets for its scripts, so npm in the temp project reads no workspace settings.
function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(npm|pnpm)_/i.test(key)),
  );
}

async function run(command: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await execFileAsync(command, args, {
      cwd,
      env: userEnv(),
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `\`${command} ${args.join(' ')}\` failed in ${cwd}\n${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`,
    );
  }
}

// The ```ts block between the README's quick-start markers, exactly as a user copies it.
async function quickStartFromReadme(): Promise<string> {
  const readme = await readFile(join(repo, 'README.md'), 'utf8');
  const match = readme.match(
    /<!-- quick-start:begin -->\s*```ts\n([\s\S]*?)```\s*<!-- quick-start:end -->/,
  );
  if (!match?.[1]) throw new Error('README.md has no ```ts block between the quick-start markers');
  return match[1];
}

// Every symlink under `dir`, with the real path it points to.
async function symlinksUnder(dir: string): Promise<Array<{ link: string; target: string }>> {
  const found: Array<{ link: string; target: string }> = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isSymbolicLink()) found.push({ link: path, target: await realpath(path) });
    else if (entry.isDirectory()) found.push(...(await symlinksUnder(path)));
  }
  return found;
}

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('pick-and-choose install from packed tarballs', () => {
  let tmp = '';

  afterAll(async () => {
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('installs core, experience and store-duckdb alone, and the README quick start compiles and runs', {
    timeout: 240_000,
  }, async () => {
    // Outside the workspace, so nothing can resolve through its node_modules.
    tmp = await mkdtemp(join(tmpdir(), 'mnemo-pack-install-'));
    const tarballs = join(tmp, 'tarballs');
    const project = join(tmp, 'project');

    // Pack the build (vitest's global setup ran `tsc -b`) as publishing would: pnpm turns
    // `workspace:^` into real version ranges.
    const tgz: Record<string, string> = {};
    for (const name of packages) {
      await run('pnpm', ['pack', '--pack-destination', tarballs], join(repo, 'packages', name));
    }
    for (const file of await readdir(tarballs)) {
      const name = packages.find((p) => file.startsWith(`mnemo-${p}-`) && file.endsWith('.tgz'));
      if (name) tgz[name] = join(tarballs, file);
    }
    expect(Object.keys(tgz).sort()).toEqual([...packages].sort());

    // An empty ESM project. @mnemo/core is a peer of the other two: the override pins every
    // @mnemo/core in the tree to the tarball, so npm never looks for it on a registry.
    await mkdir(project);
    const dependencies = Object.fromEntries(
      packages.map((name) => [`@mnemo/${name}`, `file:${tgz[name]}`]),
    );
    await writeFile(
      join(project, 'package.json'),
      `${JSON.stringify(
        {
          name: 'mnemo-quick-start',
          private: true,
          type: 'module',
          dependencies: { ...dependencies, '@types/node': '20.19.43' },
          overrides: { '@mnemo/core': '$@mnemo/core' },
        },
        null,
        2,
      )}\n`,
    );
    await run('npm', ['install', '--no-audit', '--no-fund'], project);

    // Exactly the three packages, each from its tarball, real folders (no link into the repo),
    // and the peer satisfied by the top-level core rather than a nested copy.
    expect((await readdir(join(project, 'node_modules', '@mnemo'))).sort()).toEqual([
      'core',
      'experience',
      'store-duckdb',
    ]);
    const lock = JSON.parse(await readFile(join(project, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { resolved?: string }>;
    };
    const mnemoEntries = Object.entries(lock.packages).filter(([path]) =>
      path.includes('node_modules/@mnemo/'),
    );
    expect(mnemoEntries.map(([path]) => path).sort()).toEqual(
      packages.map((name) => `node_modules/@mnemo/${name}`),
    );
    for (const [path, entry] of mnemoEntries) {
      expect(entry.resolved, `${path} must come from its tarball`).toMatch(/^file:.*\.tgz$/);
    }
    for (const name of packages) {
      const dir = join(project, 'node_modules', '@mnemo', name);
      expect((await lstat(dir)).isSymbolicLink(), `${dir} is a symlink`).toBe(false);
      const manifest = await readFile(join(dir, 'package.json'), 'utf8');
      expect(manifest, `packed ${name} still has a workspace: range`).not.toContain('workspace:');
      // The license text the MIT license asks to ship, and the sources the shipped source and
      // declaration maps point at (go to definition lands in them).
      expect((await readFile(join(dir, 'LICENSE'), 'utf8')).split('\n')[0]).toBe('MIT License');
      for (const map of ['index.js.map', 'index.d.ts.map']) {
        const { sources } = JSON.parse(await readFile(join(dir, 'dist', map), 'utf8')) as {
          sources: string[];
        };
        expect(sources).toEqual(['../src/index.ts']);
        expect((await lstat(join(dir, 'dist', sources[0] as string))).isFile()).toBe(true);
      }
    }
    const leaks = (await symlinksUnder(join(project, 'node_modules'))).filter(
      ({ target }) => target === repo || target.startsWith(`${repo}/`),
    );
    expect(leaks, 'symlinks from the temp project into the workspace').toEqual([]);

    // The kit's test doubles import without its optional peers (vitest, fast-check): a user's
    // tests may run on another runner. Neither is installed here.
    await expect(lstat(join(project, 'node_modules', 'fast-check'))).rejects.toThrow();
    await writeFile(
      join(project, 'doubles.mjs'),
      "import { createHashEmbedder, createManualClock } from '@mnemo/core/testing';\n" +
        'console.log(createHashEmbedder().dimensions, typeof createManualClock);\n',
    );
    expect(await run(process.execPath, ['doubles.mjs'], project)).toBe('64 function\n');

    // The quick start, compiled strictly and with the shipped .d.ts files checked too.
    await writeFile(join(project, 'quick-start.ts'), await quickStartFromReadme());
    await writeFile(
      join(project, 'tsconfig.json'),
      `${JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            types: ['node'],
            skipLibCheck: false,
            outDir: 'dist',
          },
          files: ['quick-start.ts'],
        },
        null,
        2,
      )}\n`,
    );
    await run(
      process.execPath,
      [join(repo, 'node_modules/typescript/bin/tsc'), '-p', project],
      project,
    );

    // What the README says it prints: the recalled contents, the replayed plan's chunk ids with
    // similarity 1, and a verified audit chain.
    const stdout = await run(process.execPath, ['dist/quick-start.js'], project);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines.slice(0, 3)).toEqual([
      '[',
      `  'To reset a password, open Settings → Security and choose "Reset password".'`,
      ']',
    ]);
    const plan = lines[3]?.match(/^\[ '([^']+)' \] 1$/);
    expect(plan, `chunk ids line: ${lines[3]}`).not.toBeNull();
    expect(plan?.[1]).toMatch(UUID_V7);
    expect(lines[4]).toBe('true');
  });
});
