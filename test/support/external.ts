/**
 * Suites and programs that live outside the project (CI keeps them beside the checkout). A test that
 * needs one runs it when present and otherwise skips with "skipped: <what> not found at <where>", so a
 * user's fresh clone passes `npm test` with nothing beside it. CABOOSE_REQUIRE_EXTERNAL=1 (for CI)
 * turns a missing suite into a failure instead of a skip.
 */
import fs from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

export interface ExternalSuite {
  /** Absolute folder of the suite. */
  dir: string;
  present: boolean;
  /** `false` when present, else the skip message (node:test prints it as the skip reason). */
  skip: string | false;
}

/**
 * The Codex apply-patch conformance scenarios: ../shared/conformance/codex-apply-patch from the repo root,
 * or CABOOSE_CONFORMANCE_DIR.
 */
export function codexConformanceSuite(env: NodeJS.ProcessEnv = process.env): ExternalSuite {
  const dir = path.resolve(env.CABOOSE_CONFORMANCE_DIR || path.join(REPO_ROOT, '..', 'shared', 'conformance', 'codex-apply-patch'));
  return external('the Codex apply-patch conformance suite', dir, env);
}

export function external(what: string, dir: string, env: NodeJS.ProcessEnv = process.env): ExternalSuite {
  const present = fs.existsSync(dir) && fs.statSync(dir).isDirectory();
  if (!present && env.CABOOSE_REQUIRE_EXTERNAL === '1') {
    throw new Error(`${what} not found at ${dir} (CABOOSE_REQUIRE_EXTERNAL=1)`);
  }
  return { dir, present, skip: present ? false : `skipped: ${what} not found at ${dir}` };
}
