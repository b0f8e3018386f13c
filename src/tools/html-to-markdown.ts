import TurndownService from 'turndown';
import { gfm } from '@joplin/turndown-plugin-gfm';

/**
 * HTML → Markdown for the fetch tool: turndown (on its bundled DOM, domino; no jsdom) with the GFM plugin for
 * tables, strikethrough and task lists. Headings, links, nested lists and fenced code blocks with their language
 * come out as Markdown; code, styling, embedded documents and site navigation are dropped. fetch runs it in a
 * worker thread (html-worker.ts), so the host's own thread never loads turndown.
 */

/** Dropped with their content. */
const DROPPED = ['script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'object', 'nav'] as const;

/** The parts of a DOM element the rules read (the DOM types are not in this project's lib). */
interface Element {
  nodeName: string;
  textContent: string | null;
  firstChild: Element | null;
  getAttribute(name: string): string | null;
}

const asElement = (node: unknown): Element => node as Element;

/** `href` made absolute against the page; javascript: and same-page fragment links have no useful target. */
function linkTarget(href: string | null, baseUrl: string | undefined): string | undefined {
  const h = href?.trim();
  if (!h || h.startsWith('#') || /^javascript:/i.test(h)) return undefined;
  if (!baseUrl) return h;
  try {
    return new URL(h, baseUrl).toString();
  } catch {
    return h;
  }
}

/** Spaces and parentheses would end a Markdown link target early. */
function markdownUrl(url: string): string {
  return url.replace(/[\s()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

const LANGUAGE_CLASS = /(?:^|\s)(?:lang|language)-([\w#+.-]+)/;

/** Language of a <pre> block: a language-x class on its <code> or on it, or its data-lang / lang attribute. */
function codeLanguage(pre: Element): string {
  const code = pre.firstChild?.nodeName === 'CODE' ? pre.firstChild : null;
  for (const cls of [code?.getAttribute('class'), pre.getAttribute('class')]) {
    const m = cls ? LANGUAGE_CLASS.exec(cls) : null;
    if (m) return m[1];
  }
  return pre.getAttribute('data-lang') ?? pre.getAttribute('lang') ?? '';
}

/** A fence longer than any backtick run inside, so code containing ``` stays one block. */
function fenced(code: string, language: string): string {
  const longest = Math.max(2, ...(code.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  return `\n\n${fence}${language}\n${code.replace(/^\n+|\n+$/g, '')}\n${fence}\n\n`;
}

function converter(baseUrl: string | undefined): TurndownService {
  const td = new TurndownService({
    headingStyle: 'atx',
    codeBlockStyle: 'fenced',
    bulletListMarker: '-',
    hr: '---',
  });
  td.use(gfm);
  td.remove([...DROPPED]);
  // The reader is a model, not a renderer: `\_` and `\*` escapes would corrupt the identifiers it copies.
  td.escape = (text) => text;

  td.addRule('title', {
    filter: 'title',
    replacement: (content) => `\n\n${content.replace(/\s+/g, ' ').trim()}\n\n`,
  });
  // Every <pre> is one fenced block, with or without a <code> inside.
  td.addRule('preformatted', {
    filter: 'pre',
    replacement: (_content, node) => fenced(asElement(node).textContent ?? '', codeLanguage(asElement(node))),
  });
  td.addRule('link', {
    filter: (node) => node.nodeName === 'A' && asElement(node).getAttribute('href') !== null,
    replacement: (content, node) => {
      const el = asElement(node);
      const target = linkTarget(el.getAttribute('href'), baseUrl);
      if (!target) return content;
      // Icon links have no text; their title or aria-label says where they go.
      const text = (content.trim() || el.getAttribute('title') || el.getAttribute('aria-label') || '').replace(/\s+/g, ' ').trim();
      if (text === '' || text === target) return `<${target}>`;
      return `[${text}](${markdownUrl(target)})`;
    },
  });
  td.addRule('image', {
    filter: 'img',
    replacement: (_content, node) => {
      const el = asElement(node);
      const alt = (el.getAttribute('alt') ?? '').replace(/\s+/g, ' ').trim();
      // Without alt text an image is decoration or a tracking pixel to the model.
      if (alt === '') return '';
      const src = el.getAttribute('src');
      const target = src && !/^data:/i.test(src) ? linkTarget(src, baseUrl) : undefined;
      return target ? `![${alt}](${markdownUrl(target)})` : `[image: ${alt}]`;
    },
  });
  return td;
}

/**
 * Outside fenced code, whitespace-only lines (left by turndown between dropped or empty inline elements) become
 * empty and runs of empty lines one; code keeps its lines as they are.
 */
function tidy(markdown: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.replace(/\u00a0/g, ' ').split('\n')) {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      out.push(line);
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
      continue;
    }
    if (marker) fence = marker;
    const blank = line.trim() === '';
    if (blank && (out.length === 0 || out[out.length - 1] === '')) continue;
    out.push(blank ? '' : line);
  }
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  return out.join('\n');
}

/** Markdown for an HTML page; relative links and images are made absolute against `baseUrl`. */
export function htmlToMarkdown(html: string, baseUrl?: string): string {
  return tidy(converter(baseUrl).turndown(html));
}
