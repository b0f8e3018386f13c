import { z } from 'zod';
import { ToolError } from '../workspace/errors';
import type { ToolContext, ToolDefinition } from './tool';

export const askUserParameters = z.object({
  question: z.string().min(1).describe('The question to ask the user. Be specific and self-contained.'),
  choices: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe('Optional answers the user can pick from. The user may still type a different answer.'),
});

export type AskUserResult = { answer: string } | { answer: null; cancelled: true };

export const ASK_USER_DESCRIPTION = [
  'Ask the user a question and wait for the answer. Use it only when you cannot proceed without a decision',
  'or a fact that only the user has (not for things you can find out with the other tools).',
  'Returns { answer }; when the user dismisses the question, { answer: null, cancelled: true }: then proceed',
  'with your best judgement and state the assumption you made.',
].join(' ');

function cancelledError(): ToolError {
  return new ToolError('cancelled', 'The question was cancelled before the user answered.');
}

/** Resolves with the user's answer, or rejects with `cancelled` as soon as `signal` aborts. */
function askAbortable(
  ask: NonNullable<ToolContext['ask']>,
  req: { question: string; choices?: string[] },
  signal: AbortSignal,
): Promise<string | null> {
  if (signal.aborted) return Promise.reject(cancelledError());
  return new Promise<string | null>((resolve, reject) => {
    const onAbort = (): void => reject(cancelledError());
    signal.addEventListener('abort', onAbort, { once: true });
    ask(req).then(
      (answer) => {
        signal.removeEventListener('abort', onAbort);
        resolve(answer);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

export function createAskUserTool(): ToolDefinition<typeof askUserParameters, AskUserResult> {
  return {
    name: 'ask_user',
    description: ASK_USER_DESCRIPTION,
    parameters: askUserParameters,
    policy: 'interactive',
    async execute(args, ctx) {
      const noUi = (detail?: string): ToolError =>
        new ToolError('internal_error', `No user interface is attached, so the question cannot be asked${detail ? ` (${detail})` : ''}.`, {
          suggestedAction: 'Proceed without asking: make a reasonable assumption and state it in your answer.',
        });
      if (!ctx.ask) throw noUi();
      const req = args.choices ? { question: args.question, choices: args.choices } : { question: args.question };
      let answer: string | null;
      try {
        answer = await askAbortable(ctx.ask, req, ctx.signal);
      } catch (err) {
        if (err instanceof ToolError) throw err;
        throw noUi(err instanceof Error ? err.message : String(err));
      }
      if (answer === null) return { answer: null, cancelled: true };
      return { answer };
    },
  };
}
