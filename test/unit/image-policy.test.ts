/**
 * `#image:path` under the file tools' path policy: secret_globs, deny_globs, every .git, confinement and
 * symlinks (to a secret, out of the workspace, or from outside into it). Each refused file holds real PNG
 * bytes, so only the policy can refuse it (the precondition: the same bytes under a plain name go).
 */
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { imagePolicyFor, readImages } from '../../src/host/image-attachments';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de', 'hex');

describe('#image: the workspace path policy', () => {
  let dir: string | undefined;
  const setup = () => {
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-imgpol-')));
    const root = path.join(dir, 'ws');
    fs.mkdirSync(root);
    return { root, outside: dir };
  };
  afterEach(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });
  const labels = async (root: string, paths: string[], deny?: string[], secret?: string[]) => {
    const r = await readImages(paths.map((p) => ({ kind: 'image' as const, path: p })), imagePolicyFor(root, deny, secret));
    return { labels: r.labels, sent: r.parts.length };
  };

  it('the same PNG bytes go under a plain name (precondition)', async () => {
    const { root } = setup();
    fs.writeFileSync(path.join(root, 'shot.png'), PNG);
    assert.deepEqual(await labels(root, ['shot.png']), { labels: ['image shot.png (PNG, 33 B)'], sent: 1 });
  });

  it('a file matching secret_globs, or a symlink named shot.png leading to one, is refused', async () => {
    const { root } = setup();
    fs.writeFileSync(path.join(root, '.env.png'), PNG);
    fs.mkdirSync(path.join(root, 'keys'));
    fs.writeFileSync(path.join(root, 'keys', 'server.key'), PNG);
    fs.symlinkSync('keys/server.key', path.join(root, 'shot.png'));
    fs.symlinkSync(path.join(root, '.env.png'), path.join(root, 'abs-link.png'));
    const r = await labels(root, ['.env.png', 'shot.png', 'abs-link.png', path.join(root, 'shot.png')]);
    assert.equal(r.sent, 0);
    const why = 'not attached: matches secret_globs (a file that usually holds secrets is never attached)';
    assert.deepEqual(r.labels, [`image .env.png — ${why}`, `image shot.png — ${why}`, `image abs-link.png — ${why}`, `image ${path.join(root, 'shot.png')} — ${why}`]);
  });

  it("the user's secret_globs (replacing the defaults) and deny_globs; any .git", async () => {
    const { root } = setup();
    fs.mkdirSync(path.join(root, 'private'));
    fs.writeFileSync(path.join(root, 'private', 'a.png'), PNG);
    fs.mkdirSync(path.join(root, 'build'));
    fs.writeFileSync(path.join(root, 'build', 'b.png'), PNG);
    fs.mkdirSync(path.join(root, 'sub', '.git'), { recursive: true });
    fs.writeFileSync(path.join(root, 'sub', '.git', 'c.png'), PNG);
    fs.writeFileSync(path.join(root, '.env.png'), PNG);
    const r = await labels(root, ['private/a.png', 'build/b.png', 'sub/.git/c.png', '.env.png'], ['build/**'], ['private/**']);
    assert.deepEqual(r.labels, [
      'image private/a.png — not attached: matches secret_globs (a file that usually holds secrets is never attached)',
      'image build/b.png — not attached: denied by deny_globs',
      'image sub/.git/c.png — not attached: inside a .git folder (protected)',
      'image .env.png (PNG, 33 B)',
    ]);
  });

  it('a symlink out of the workspace is outside, even typed as an absolute path in the workspace', async () => {
    const { root, outside } = setup();
    fs.writeFileSync(path.join(outside, 'out.png'), PNG);
    fs.symlinkSync(path.join(outside, 'out.png'), path.join(root, 'link.png'));
    fs.mkdirSync(path.join(outside, 'd'));
    fs.writeFileSync(path.join(outside, 'd', 'in.png'), PNG);
    fs.symlinkSync(path.join(outside, 'd'), path.join(root, 'dirlink'));
    const r = await labels(root, ['link.png', path.join(root, 'link.png'), 'dirlink/in.png']);
    assert.equal(r.sent, 0);
    for (const l of r.labels) assert.match(l, /not attached: outside the workspace/);
  });

  it('an absolute path outside: goes as typed, unless its name is a secret or it leads into the workspace to a refused file', async () => {
    const { root, outside } = setup();
    fs.writeFileSync(path.join(outside, 'ok.png'), PNG);
    fs.writeFileSync(path.join(outside, '.env.png'), PNG);
    fs.writeFileSync(path.join(root, '.env.png'), PNG);
    fs.symlinkSync(path.join(root, '.env.png'), path.join(outside, 'innocent.png'));
    fs.mkdirSync(path.join(root, '.git'));
    fs.writeFileSync(path.join(root, '.git', 'x.png'), PNG);
    fs.symlinkSync(path.join(root, '.git', 'x.png'), path.join(outside, 'git.png'));
    const r = await labels(root, [path.join(outside, 'ok.png'), path.join(outside, '.env.png'), path.join(outside, 'innocent.png'), path.join(outside, 'git.png')]);
    assert.equal(r.sent, 1);
    assert.deepEqual(r.labels.map((l) => l.replace(outside, '<out>')), [
      'image ok.png (PNG, 33 B)',
      'image <out>/.env.png — not attached: matches secret_globs (a file that usually holds secrets is never attached)',
      'image <out>/innocent.png — not attached: matches secret_globs (a file that usually holds secrets is never attached)',
      'image <out>/git.png — not attached: inside a .git folder (protected)',
    ]);
  });
});
