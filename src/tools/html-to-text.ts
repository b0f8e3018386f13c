/**
 * A small HTML → plain text reducer for the fetch tool: drops script/style/noscript/template/head content
 * and comments, turns block elements and <br> into line breaks, list items into "- " lines, links into
 * `text (href)`, decodes entities and collapses whitespace. Not a parser: good enough for the model to read
 * a page, not for faithful rendering.
 */

const DROP_ELEMENTS = ['script', 'style', 'noscript', 'template', 'svg', 'head', 'iframe', 'object'];

const BLOCK_ELEMENTS = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'dd', 'details', 'dialog', 'div', 'dl', 'dt',
  'fieldset', 'figcaption', 'figure', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header',
  'hr', 'html', 'li', 'main', 'nav', 'ol', 'p', 'pre', 'section', 'summary', 'table', 'tbody', 'td',
  'tfoot', 'th', 'thead', 'tr', 'ul', 'title', 'caption', 'option',
]);

/** HTML 4 Latin-1 entity names for U+00A0..U+00FF, in code point order. */
const LATIN1_NAMES = (
  'nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 ' +
  'acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml ' +
  'Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde ' +
  'Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ' +
  'ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide ' +
  'oslash ugrave uacute ucirc uuml yacute thorn yuml'
).split(' ');

const NAMED_ENTITIES: Record<string, string> = {
  ...Object.fromEntries(LATIN1_NAMES.map((name, i) => [name, String.fromCodePoint(0xa0 + i)])),
  amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', ndash: '–', mdash: '—', hellip: '…',
  lsquo: '‘', rsquo: '’', ldquo: '“', rdquo: '”', bull: '•', trade: '™', euro: '€', shy: '', zwj: '', zwnj: '',
  larr: '←', rarr: '→', uarr: '↑', darr: '↓', le: '≤', ge: '≥', ne: '≠', minus: '−', thinsp: ' ', ensp: ' ',
  emsp: ' ',
};

/** Decodes named (common subset), decimal and hex character references; unknown ones are left as is. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#[0-9]+|#[xX][0-9a-fA-F]+|[a-zA-Z][a-zA-Z0-9]*);/g, (whole, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? parseInt(ref.slice(2), 16) : parseInt(ref.slice(1), 10);
      if (!Number.isFinite(code) || code <= 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return whole;
      return String.fromCodePoint(code);
    }
    const named = NAMED_ENTITIES[ref] ?? NAMED_ENTITIES[ref.toLowerCase()];
    return named ?? whole;
  });
}

function attr(tag: string, name: string): string | undefined {
  const m = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'i').exec(tag);
  if (!m) return undefined;
  return decodeEntities(m[1] ?? m[2] ?? m[3] ?? '');
}

/** Makes `href` absolute against `baseUrl` when possible; javascript: and fragment-only links are dropped. */
function linkTarget(href: string | undefined, baseUrl: string | undefined): string | undefined {
  if (!href) return undefined;
  const h = href.trim();
  if (h === '' || h.startsWith('#') || /^javascript:/i.test(h)) return undefined;
  if (!baseUrl) return h;
  try {
    return new URL(h, baseUrl).toString();
  } catch {
    return h;
  }
}

export function htmlToText(html: string, baseUrl?: string): string {
  let s = html.replace(/<!--[\s\S]*?-->/g, '').replace(/<!DOCTYPE[^>]*>/gi, '').replace(/<!\[CDATA\[[\s\S]*?\]\]>/g, '');
  // The <title> lives in <head>; keep it as the first line before dropping the head.
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(s);
  for (const el of DROP_ELEMENTS) {
    s = s.replace(new RegExp(`<${el}\\b[^>]*>[\\s\\S]*?<\\/${el}\\s*>`, 'gi'), ' ');
    s = s.replace(new RegExp(`<${el}\\b[^>]*\\/>`, 'gi'), ' ');
  }
  // <pre> keeps its whitespace: protect its newlines and spaces from the collapsing below.
  s = s.replace(/<pre\b[^>]*>([\s\S]*?)<\/pre\s*>/gi, (_m, inner: string) =>
    '\n' + inner.replace(/\n/g, '\u0000N').replace(/ /g, '\u0000S').replace(/\t/g, '\u0000T') + '\n',
  );
  s = s.replace(/<a\b([^>]*)>([\s\S]*?)<\/a\s*>/gi, (_m, attrs: string, inner: string) => {
    const target = linkTarget(attr(` ${attrs}`, 'href'), baseUrl);
    const innerText = inner.replace(/<[^>]*>/g, '').trim();
    if (!target) return inner;
    if (innerText === '' || decodeEntities(innerText) === target) return ` ${target} `;
    return `${inner} (${target})`;
  });
  s = s.replace(/<img\b[^>]*>/gi, (tag) => {
    const alt = attr(tag, 'alt');
    return alt ? ` [image: ${alt}] ` : ' ';
  });
  s = s.replace(/<\/?([a-zA-Z][a-zA-Z0-9-]*)\b[^>]*>/g, (tag, name: string) => {
    const n = name.toLowerCase();
    if (n === 'br') return '\n';
    if (n === 'li') return tag.startsWith('</') ? '' : '\n- ';
    if (/^h[1-6]$/.test(n) && !tag.startsWith('</')) return '\n\n' + '#'.repeat(Number(n[1])) + ' ';
    if (n === 'td' || n === 'th') return tag.startsWith('</') ? ' \t ' : ' ';
    if (n === 'p' || n === 'tr' || n === 'table' || n === 'hr') return '\n\n';
    if (BLOCK_ELEMENTS.has(n)) return '\n';
    return '';
  });
  s = decodeEntities(s.replace(/\u00a0/g, ' '));
  const lines = s
    .split('\n')
    .map((line) => line.replace(/[ \t\f\v\r]+/g, ' ').trim())
    .map((line) => line.replace(/\u0000N/g, '\n').replace(/\u0000S/g, ' ').replace(/\u0000T/g, '\t'));
  const out: string[] = [];
  for (const line of lines) {
    if (line === '' && (out.length === 0 || out[out.length - 1] === '')) continue;
    out.push(line);
  }
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  let text = out.join('\n');
  if (title) {
    const t = decodeEntities(title[1].replace(/<[^>]*>/g, '')).replace(/\s+/g, ' ').trim();
    if (t !== '' && !text.startsWith(t)) text = `${t}\n\n${text}`;
  }
  return text;
}
