/**
 * An external agent's file requests (ACP fs/*) through our hands: a read sees the user's unsaved buffer
 * and is remembered as the basis of the agent's next write to that file; a write goes through write_file
 * (inline review, stale refusal, one undo step, trash/checkpoint/audit), asking in the modes that ask.
 * Files that usually hold secrets are read only once the user allows it.
 */
import { randomUUID } from 'node:crypto';
import type * as acp from '@agentclientprotocol/sdk';
import type { AgentState, ApprovalDecision, ApprovalRequest, PermissionMode } from '../agent/loop';
import { permissionFor } from '../tools/permissions';
import { secretReason } from '../tools/secret-targets';
import type { ReviewSelection } from '../workspace/review';
import { fileWorkspace, type FileWorkspace } from '../workspace/workspace';
import { decodeText } from '../workspace/encoding';
import { writeFileTool } from '../tools/write_file';
import { refusal, sdk } from './sdk';
import type { AcpHost } from './types';

/** What the files part asks of the agent it serves. */
export interface AcpFilesAgent {
  mode(): PermissionMode;
  state(): AgentState;
  /** Asks the user through our float; 'cancelled' when the turn stopped meanwhile. */
  ask(req: ApprovalRequest): Promise<ApprovalDecision | 'cancelled'>;
}

export class AcpFiles {
  /** sha256 of what the agent last read of each file through us: the basis its writes are checked against. */
  private readonly seen = new Map<string, string>();
  /** Secret files (secret_globs) the user allowed the agent to read for this session with "always". */
  private readonly approvedSecrets = new Set<string>();

  constructor(
    private readonly name: string,
    private readonly host: AcpHost,
    private readonly agent: AcpFilesAgent,
  ) {}

  /** fs/read_text_file. */
  async read(p: acp.ReadTextFileRequest): Promise<acp.ReadTextFileResponse> {
    const fw = fileWorkspace(this.host.workspace);
    try {
      const r = fw.resolve(p.path);
      await this.approveSecretRead(fw, r.rel);
      // The unsaved buffer when the file is loaded; what was seen is remembered for the write gate.
      const v = await fw.files.viewChecked(r.abs, r.rel, { remember: true });
      this.seen.set(r.abs, v.sha256);
      const text = decodeText(v.bytes).text;
      if (!p.line && !p.limit) return { content: text };
      const lines = text.split('\n');
      const start = Math.max(1, p.line ?? 1) - 1;
      const end = p.limit ? start + p.limit : lines.length;
      return { content: lines.slice(start, end).join('\n') };
    } catch (e) {
      if (e instanceof (sdk().RequestError)) throw e;
      throw refusal(e instanceof Error ? e.message : String(e), { path: p.path });
    }
  }

  /** A file that usually holds secrets (secret_globs) is read only after the user allows it, in every mode. */
  private async approveSecretRead(fw: FileWorkspace, rel: string): Promise<void> {
    if (!fw.isSecret(rel) || this.approvedSecrets.has(rel)) return;
    const id = randomUUID();
    const d = await this.agent.ask({ id, toolCallId: id, tool: 'read_file', args: { path: rel }, reason: secretReason('read_file', [rel]), label: `${this.name} (ACP)` });
    if (d === 'cancelled') throw refusal(`The read of ${rel} was cancelled: the user stopped the turn.`, { path: rel, kind: 'cancelled' });
    if (d.decision === 'reject') throw refusal(`The user did not allow reading ${rel}, a file that usually holds secrets${d.reason ? `: ${d.reason}` : ''}.`, { path: rel, kind: 'rejected' });
    if (d.decision === 'always') this.approvedSecrets.add(rel);
  }

  /** fs/write_text_file. */
  async write(p: acp.WriteTextFileRequest, signal: AbortSignal): Promise<acp.WriteTextFileResponse> {
    const fw = fileWorkspace(this.host.workspace);
    let rel: string;
    let abs: string;
    try {
      ({ rel, abs } = fw.resolve(p.path));
    } catch (e) {
      throw refusal(e instanceof Error ? e.message : String(e), { path: p.path });
    }
    if (this.agent.mode() === 'plan') {
      this.host.events.notice(`plan mode: ${this.name}'s write to ${rel} was refused`);
      throw refusal(`The write to ${rel} was refused: the user's session is in plan mode, where nothing is written. Describe the change instead.`, { path: rel, kind: 'blocked_by_mode' });
    }
    let expected = this.seen.get(abs);
    if (expected === undefined) {
      const v = await fw.files.view(abs);
      if (v.kind === 'missing') expected = '';
      else if (v.source === 'buffer') {
        throw refusal(`${rel} is open in the editor with unsaved changes you have not seen: read it with fs/read_text_file first, then write.`, { path: rel, kind: 'stale_file' });
      } else expected = v.sha256 ?? ''; // never read through us: the user reviews the whole change against the disk
    }
    const args = { path: rel, content: p.content, expectedSha256: expected };
    const ac = new AbortController();
    const abort = () => ac.abort();
    signal.addEventListener('abort', abort, { once: true });
    try {
      let review: ReviewSelection | undefined;
      const perm = permissionFor(this.agent.mode(), 'edit');
      if (perm === 'ask' && !this.host.grants.has('write_file')) {
        let preview;
        try {
          preview = await writeFileTool.preview!(args, { signal: ac.signal, workspace: this.host.workspace, sessionId: this.host.sessionId });
        } catch (e) {
          throw refusal(`The write to ${rel} was refused: ${e instanceof Error ? e.message : String(e)}`, { path: rel });
        }
        const id = randomUUID();
        const d = await this.agent.ask({ id, toolCallId: id, tool: 'write_file', args, preview, label: `${this.name} (ACP)` });
        if (d === 'cancelled') throw refusal(`The write to ${rel} was cancelled: the user stopped the turn.`, { path: rel, kind: 'cancelled' });
        if (d.decision === 'reject') throw refusal(`The user rejected the write to ${rel}${d.reason ? `: ${d.reason}` : ''}.`, { path: rel, kind: 'rejected' });
        if (d.decision === 'always') {
          this.host.grants.add('write_file');
          this.host.events.state(this.agent.state(), this.agent.state());
        }
        review = d.review?.files.some((f) => f.rejected.length > 0) ? d.review : undefined;
      }
      const res = await this.host.call('write_file', args, { signal: ac.signal, ...(review ? { review } : {}) });
      if (!res.ok) {
        const why = res.error.message + (res.error.kind === 'stale_file' ? ' Read the file again with fs/read_text_file (it may be an unsaved buffer) and redo your change on what you read.' : '');
        this.host.events.notice(`${this.name}'s write to ${rel} was refused: ${res.error.message}`);
        throw refusal(why, { path: rel, kind: res.error.kind });
      }
      const data = res.data as { sha256?: string; review?: { rejected?: { hunk: number; reason?: string }[] } };
      if (data.sha256) this.seen.set(abs, data.sha256);
      return {};
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }
}
