/**
 * The first-request path (src/host/first-request.ts) sends a tool list generated at build time
 * (scripts/bundle-host.mjs → src/host/first-tools-gen.ts, built into dist/host-first.bundle.js, with a copy in
 * dist/first-tools.json). It must be the list a session's registry gives now, from the tools' zod schemas,
 * for every setting it depends on (web_search configured or not, the sandbox described or not).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { firstToolsFor, type FirstTools } from '../../src/host/first-tools';
import { generateFirstTools, sessionToolList } from '../../src/host/first-tools-gen';

const BUILT = path.join(__dirname, '..', '..', 'dist', 'first-tools.json');
const BUNDLE = path.join(__dirname, '..', '..', 'dist', 'host-first.bundle.js');

describe('the first request’s tool list', () => {
  it('generated at build time equals the tools a session lists now, in every variant', (t) => {
    if (!fs.existsSync(BUILT)) return t.skip(`skipped: ${BUILT} not found (run npm run build)`);
    const built = JSON.parse(fs.readFileSync(BUILT, 'utf8')) as FirstTools;
    assert.deepEqual(built, JSON.parse(JSON.stringify(generateFirstTools())), 'the build is current');
    for (const webSearch of [false, true]) {
      for (const sandboxed of [false, true]) {
        const now = JSON.parse(JSON.stringify(sessionToolList({ webSearch, sandboxed })));
        assert.deepEqual(firstToolsFor(built, { webSearch, sandboxed }), now, `web_search ${webSearch}, sandboxed ${sandboxed}`);
        // Byte for byte: the request body is compared as JSON text.
        assert.equal(JSON.stringify(firstToolsFor(built, { webSearch, sandboxed })), JSON.stringify(sessionToolList({ webSearch, sandboxed })));
      }
    }
    assert.ok(built.tools.some((x) => x.name === 'web_search') && built.tools.some((x) => x.name === 'bash'), 'the variable tools are there');
    assert.ok(!built.tools.some((x) => x.name === 'search_files'), 'only offered tools');
  });

  it('is built into the first-request bundle', (t) => {
    if (!fs.existsSync(BUNDLE)) return t.skip(`skipped: ${BUNDLE} not found (run npm run build)`);
    const src = fs.readFileSync(BUNDLE, 'utf8');
    // The tools' schemas are there (the JSON text, escaped as a string literal).
    assert.ok(src.includes('expectedSha256'), 'edit tools’ schemas in the bundle');
    // The store is not: the request goes before it opens.
    assert.ok(!src.includes('better-sqlite3'), 'no store in the first-request bundle');
  });
});
