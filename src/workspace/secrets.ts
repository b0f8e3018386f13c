/**
 * Files that usually hold secrets (issue 18, item 11): reading or searching one needs the user's
 * approval in every mode. The list is `secret_globs` (same rules as deny_globs: a glob without "/"
 * matches a name at any depth).
 */
import { compileGlobList, type PathMatcher } from './glob-match';

export const DEFAULT_SECRET_GLOBS: readonly string[] = [
  '.env*',
  '*.pem',
  '*.key',
  'id_*',
  '.npmrc',
  '.netrc',
  '.pypirc',
  '.pgpass',
  '.git-credentials',
  '*.p12',
  '*.pfx',
];

export class SecretMatcher {
  private m: PathMatcher | undefined;
  constructor(readonly globs: readonly string[] = DEFAULT_SECRET_GLOBS) {}

  /** `rel` (workspace-relative) or a folder above it matches a secret glob. */
  isSecret(rel: string): boolean {
    if (rel === '') return false;
    this.m ??= compileGlobList(this.globs);
    return this.m(rel);
  }
}
