/**
 * The zod refinements of host.init's and send's schemas that the first-request bundle's generated
 * validators call (first-validate-gen.ts): the same functions, named as JSON Schema formats.
 */
import { isValidRulesPattern } from '../workspace/rules';

export const FIRST_FORMATS: Record<string, (s: string) => boolean> = {
  'caboose-rules-pattern': isValidRulesPattern,
};
