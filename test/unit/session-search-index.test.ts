/**
 * The session search index and streaming replies (issue 24, migration 10): a partial-row write no longer
 * re-indexes the whole reply so far; finished replies are indexed once; a search indexes what is still
 * pending (a reply streaming now, or one a crash cut), so it finds what it found before; databases made
 * by the previous schema open and keep their rows and their index.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS, SessionRepository, openStore, type Store } from '../../src/store';
import { SessionRecorder } from '../../src/host/session-recorder';
import { restoreConversation } from '../../src/host/session-history';
import { INTERRUPTED_MARKER } from '../../src/agent/messages';
import type { ChatMessage } from '../../src/agent/provider';

const user = (content: string): ChatMessage => ({ role: 'user', content });
const totalChanges = (db: Database.Database) => (db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
/** Row ids whose indexed text has `word` (the FTS table itself, not the search's catch-up). */
const indexedRows = (db: Database.Database, word: string) =>
  (db.prepare('SELECT rowid AS id FROM session_messages_fts WHERE session_messages_fts MATCH ? ORDER BY rowid').all(`"${word}"`) as { id: number }[]).map((r) => r.id);
/** FTS5's own check that the index holds exactly the content table's text (throws otherwise; so only
 * meaningful when no row is pending). */
const indexMatchesContent = (db: Database.Database) => {
  db.prepare("INSERT INTO session_messages_fts(session_messages_fts, rank) VALUES ('integrity-check', 1)").run();
};
const tmpDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'caboose-search-index-'));

/** A database as the schema before migration 10 made it, with rows written as that version's code wrote them. */
function version9Database(file: string): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  for (const m of MIGRATIONS.filter((x) => x.version <= 9)) {
    db.exec(m.sql);
    db.pragma(`user_version = ${m.version}`);
  }
  db.prepare("INSERT INTO sessions (id, cwd, title, title_source, model, created_at, updated_at, message_count) VALUES ('old', '/w', 'pelicans', 'fallback', 'm', 1, 1, 2)").run();
  const insert = db.prepare(
    'INSERT INTO session_messages (session_id, kind, role, message_json, display_json, text, in_context, partial, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  );
  insert.run('old', 'message', 'user', JSON.stringify(user('tell me about pelicans')), JSON.stringify({ text: 'tell me about pelicans' }), 'tell me about pelicans', 1, 0, 1);
  insert.run('old', 'message', 'assistant', JSON.stringify({ role: 'assistant', content: 'Pelicans scoop fish.' }), JSON.stringify({ text: 'Pelicans scoop fish.' }), 'Pelicans scoop fish.', 1, 0, 2);
  // A reply a crash cut: partial, indexed by the old triggers with its last flushed text.
  const cut = Number(insert.run('old', 'message', 'assistant', JSON.stringify({ role: 'assistant', content: 'Their bills hold' }), null, 'Their bills', 1, 1, 3).lastInsertRowid);
  db.prepare('UPDATE session_messages SET message_json = ?, text = ? WHERE id = ? AND partial = 1').run(JSON.stringify({ role: 'assistant', content: 'Their bills hold gallons' }), 'Their bills hold gallons', cut);
  assert.equal(db.pragma('user_version', { simple: true }), 9);
  db.close();
}

describe('session search index and streaming replies', () => {
  it('a database made by the previous schema opens: every row kept, its index still right, old and cut replies found', () => {
    const dir = tmpDir();
    const file = path.join(dir, 'caboose.sqlite');
    try {
      version9Database(file);
      const store = openStore(file);
      try {
        assert.equal(store.db.pragma('user_version', { simple: true }), MIGRATIONS.at(-1)!.version);
        const rows = store.sessions.rows('old');
        assert.deepEqual(
          rows.map((r) => [r.role, r.text, r.partial]),
          [
            ['user', 'tell me about pelicans', false],
            ['assistant', 'Pelicans scoop fish.', false],
            ['assistant', 'Their bills hold gallons', true],
          ],
        );
        assert.deepEqual(restoreConversation(rows).at(-1)!.message, { role: 'assistant', content: `Their bills hold gallons\n\n${INTERRUPTED_MARKER}` });
        // The old triggers indexed every row: all of them count as indexed, the index is unchanged.
        assert.equal(store.sessions.indexPending(), 0);
        indexMatchesContent(store.db);
        assert.deepEqual(store.sessions.search('scoop').map((h) => h.id), ['old']);
        assert.deepEqual(store.sessions.search('gallons').map((h) => h.id), ['old'], 'the cut reply is found');
        // New rows in the old session: a streaming reply, then its end; the index stays exact.
        const rec = new SessionRecorder(store.sessions, 'old', { cwd: '/w', model: 'm' });
        rec.messageAdded(user('and their wings?'));
        rec.text('Wingspans');
        rec.text(' reach three metres');
        rec.flush();
        rec.messageAdded({ role: 'assistant', content: 'Wingspans reach three metres.' });
        indexMatchesContent(store.db);
        assert.deepEqual(store.sessions.search('wingspans metres').map((h) => h.id), ['old']);
        // Deleting the session takes its text out of the index (old and new rows).
        assert.equal(store.sessions.delete('old'), true);
        indexMatchesContent(store.db);
        assert.deepEqual(store.sessions.search('pelicans'), []);
        assert.deepEqual(indexedRows(store.db, 'gallons'), []);
      } finally {
        store.close();
      }
      // Opening it again is a no-op (the migration ran once).
      const again = openStore(file);
      assert.equal(again.db.pragma('user_version', { simple: true }), MIGRATIONS.at(-1)!.version);
      again.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a partial-row write changes its row and nothing in the search index; the finished reply is indexed once', () => {
    const store = openStore(':memory:');
    try {
      const rec = new SessionRecorder(store.sessions, 's', { cwd: '/w', model: 'm' });
      rec.messageAdded(user('explain the parser'));
      rec.text('The tokenizer ');
      const rowId = store.sessions.rows('s').at(-1)!.id;
      for (let i = 0; i < 20; i++) {
        rec.text(`splits word${i} `);
        const before = totalChanges(store.db);
        rec.flush();
        // One row written (the reply so far); before migration 10 the FTS trigger also deleted and
        // re-inserted the whole text in the index (7–9 changes a write, more as the reply grew).
        assert.equal(totalChanges(store.db) - before, 1, `flush ${i}: only the row changed`);
      }
      assert.equal(store.sessions.rows('s').at(-1)!.text.includes('word19'), true, 'the text so far is stored');
      assert.deepEqual(indexedRows(store.db, 'tokenizer'), [], 'a streaming reply is not in the index');
      rec.messageAdded({ role: 'assistant', content: 'The tokenizer splits words.' });
      assert.deepEqual(indexedRows(store.db, 'tokenizer'), [rowId], 'the finished reply is');
      assert.deepEqual(store.sessions.search('tokenizer').map((h) => h.id), ['s']);
      assert.equal(store.sessions.indexPending(), 0, 'nothing left to index');
      indexMatchesContent(store.db);
    } finally {
      store.close();
    }
  });

  it('search finds a reply still streaming (its text as last flushed); the next write takes it out of the index once', () => {
    const store = openStore(':memory:');
    try {
      const rec = new SessionRecorder(store.sessions, 's', { cwd: '/w', model: 'm' });
      rec.messageAdded(user('about herons'));
      rec.text('Herons wade ');
      rec.text('in marshes');
      rec.flush();
      const rowId = store.sessions.rows('s').at(-1)!.id;
      assert.deepEqual(store.sessions.search('marshes').map((h) => h.id), ['s']);
      assert.deepEqual(indexedRows(store.db, 'marshes'), [rowId], 'the search indexed the text so far');
      indexMatchesContent(store.db);
      rec.text(' and estuaries');
      rec.flush();
      assert.deepEqual(indexedRows(store.db, 'marshes'), [], 'the grown text is pending again');
      const before = totalChanges(store.db);
      rec.text(' at dawn');
      rec.flush();
      assert.equal(totalChanges(store.db) - before, 1, 'later writes leave the index alone again');
      assert.deepEqual(store.sessions.search('estuaries').map((h) => h.id), ['s']);
      rec.messageAdded({ role: 'assistant', content: 'Herons wade in marshes and estuaries at dawn.' });
      indexMatchesContent(store.db);
      assert.deepEqual(store.sessions.search('dawn herons').map((h) => h.id), ['s']);
    } finally {
      store.close();
    }
  });

  it('a database this connection cannot write: search still answers from what is indexed', () => {
    const dir = tmpDir();
    try {
      const store = openStore(dir);
      const rec = new SessionRecorder(store.sessions, 'r', { cwd: '/w', model: 'm' });
      rec.messageAdded(user('about puffins'));
      rec.text('Puffins nest ');
      rec.text('in burrows');
      rec.flush();
      store.close();
      const ro = new Database(path.join(dir, 'caboose.sqlite'), { readonly: true });
      try {
        const repo = new SessionRepository(ro);
        assert.deepEqual(repo.search('puffins').map((h) => h.id), ['r'], 'the user message is indexed');
        assert.deepEqual(repo.search('burrows'), [], 'the pending reply cannot be indexed here, and nothing fails');
      } finally {
        ro.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a host SIGKILLed mid-reply: the reply is restored as interrupted and found by search', async () => {
    const dir = tmpDir();
    try {
      // A separate process records a streaming reply and is killed while the reply is still partial.
      const script = `
        const { openStore } = require(${JSON.stringify(path.resolve('src/store/index.ts'))});
        const { SessionRecorder } = require(${JSON.stringify(path.resolve('src/host/session-recorder.ts'))});
        const store = openStore(${JSON.stringify(dir)});
        const rec = new SessionRecorder(store.sessions, 'k', { cwd: '/w', model: 'm' });
        rec.messageAdded({ role: 'user', content: 'describe albatrosses' });
        rec.text('Albatrosses glide ');
        rec.text('for hours over oceans');
        rec.flush();
        process.stdout.write('flushed\\n');
        setInterval(() => rec.text(' and more'), 1000);
      `;
      const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exit = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      await new Promise<void>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('flushed')) resolve();
        });
        child.on('exit', () => reject(new Error(`the recorder exited early: ${out}`)));
      });
      child.kill('SIGKILL');
      assert.equal(await exit, 'SIGKILL');

      const store: Store = openStore(dir);
      try {
        const rows = store.sessions.rows('k');
        assert.equal(rows.at(-1)!.partial, true, 'the precondition: the reply was cut while partial');
        assert.deepEqual(restoreConversation(rows).at(-1)!.message, { role: 'assistant', content: `Albatrosses glide for hours over oceans\n\n${INTERRUPTED_MARKER}` });
        assert.deepEqual(indexedRows(store.db, 'oceans'), [], 'not indexed when the host died');
        const hits = store.sessions.search('oceans');
        assert.deepEqual(hits.map((h) => h.id), ['k'], 'found after the restart');
        assert.match(hits[0].snippet, /«oceans»/);
        indexMatchesContent(store.db);
      } finally {
        store.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
