/** Bytes ↔ buffer lines (src/workspace/buffer-bridge.ts): what a loaded buffer reads from and writes to a file. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bufferLines, bufferTextToBytes, bytesToBufferText, linesToBytes, type BufferFormat } from '../../src/workspace/buffer-bridge';
import { UNIX } from '../support/fake-bridge';

test('buffer text ↔ bytes honour fileformat, eol and BOM', () => {
  const dos: BufferFormat = { eol: '\r\n', finalEol: true, bom: true, fileencoding: 'utf-8' };
  const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('a\r\nb\r\n')]);
  const dec = bytesToBufferText(bytes, dos);
  assert.deepEqual(dec, { text: 'a\nb\n', finalEol: true, bom: true });
  assert.ok(bufferTextToBytes(dec.text, dos).equals(bytes));
  assert.equal(bufferTextToBytes('', UNIX).length, 0, 'an empty buffer writes 0 bytes');
  assert.equal(bufferTextToBytes('a\n', { ...UNIX, finalEol: false }).toString(), 'a');
  assert.deepEqual(bytesToBufferText(Buffer.from('x'), UNIX), { text: 'x\n', finalEol: false, bom: false });
});

test('the byte-level conversions (bufferLines, linesToBytes) agree with the text ones', () => {
  const formats: BufferFormat[] = [
    UNIX,
    { ...UNIX, finalEol: false },
    { ...UNIX, bom: true },
    { eol: '\r\n', finalEol: true, bom: false, fileencoding: 'utf-8' },
    { eol: '\r', finalEol: false, bom: true, fileencoding: 'utf-8' },
  ];
  const files = ['', 'x', 'a\nb\n', 'a\nb', '\ufeffa\n', 'a\r\nb\r\n', 'a\rb', 'é\n\n'];
  for (const fmt of formats) {
    for (const f of files) {
      const bytes = Buffer.from(f, 'utf8');
      const text = bytesToBufferText(bytes, fmt);
      const lines = bufferLines(bytes, fmt);
      const what = `${JSON.stringify(f)} as ${JSON.stringify(fmt)}`;
      assert.equal(lines.lines.toString('utf8'), text.text, `lines of ${what}`);
      assert.equal(lines.finalEol, text.finalEol, `finalEol of ${what}`);
      assert.equal(lines.bom, text.bom, `bom of ${what}`);
      const back = { ...fmt, finalEol: text.finalEol, bom: text.bom };
      assert.ok(linesToBytes(lines.lines, back).equals(bufferTextToBytes(text.text, back)), `written back: ${what}`);
    }
  }
});
