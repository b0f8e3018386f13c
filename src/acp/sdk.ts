/**
 * The Agent Client Protocol SDK, loaded on first use (it is an ES module), and the error an ACP request
 * handler throws to refuse: the agent reads its message and data.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
// The SDK is an ES module: loaded when the first ACP agent starts (Node ≥ 20.19 requires it as CommonJS).
export const sdk = (): typeof import('@agentclientprotocol/sdk') => {
  try {
    return require('@agentclientprotocol/sdk') as typeof import('@agentclientprotocol/sdk');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_REQUIRE_ESM') throw new Error(`ACP agents need Node 20.19 or newer (this is ${process.version})`);
    throw e;
  }
};

/** A write refused or failed: the agent reads why (JSON-RPC error message and data). */
export function refusal(message: string, data?: Record<string, unknown>): Error {
  return new (sdk().RequestError)(-32000, message, data);
}
