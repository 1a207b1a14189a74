// A small XML reader for repo's manifest files: elements, attributes, comments,
// the XML declaration and the five predefined entities plus character
// references. Enough for manifests, which carry everything in attributes;
// no DTDs, namespaces or CDATA (a manifest has none). Each element keeps its
// line so an import error can name it.

export interface XmlElement {
  name: string;
  attrs: Map<string, string>;
  children: XmlElement[];
  line: number;
}

export class XmlSyntaxError extends Error {
  constructor(
    readonly line: number,
    what: string,
  ) {
    super(what);
  }
}

const NAME = /[A-Za-z_:][-A-Za-z0-9_.:]*/y;
const SPACE = /\s*/y;
const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decode(text: string, line: number): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (_, ref: string) => {
    if (ref.startsWith("#x")) return String.fromCodePoint(Number.parseInt(ref.slice(2), 16));
    if (ref.startsWith("#")) return String.fromCodePoint(Number.parseInt(ref.slice(1), 10));
    const named = ENTITIES[ref];
    if (named === undefined) throw new XmlSyntaxError(line, `unknown entity &${ref};`);
    return named;
  });
}

/** Parses `text` and returns its root element; throws XmlSyntaxError with the line of the fault. */
export function parseXml(text: string): XmlElement {
  let pos = 0;
  const lineAt = (at: number): number => {
    let n = 1;
    for (let i = text.indexOf("\n"); i !== -1 && i < at; i = text.indexOf("\n", i + 1)) n++;
    return n;
  };
  const fail = (what: string, at = pos): never => {
    throw new XmlSyntaxError(lineAt(at), what);
  };
  const skipSpace = () => {
    SPACE.lastIndex = pos;
    SPACE.exec(text);
    pos = SPACE.lastIndex;
  };
  const readName = (): string => {
    NAME.lastIndex = pos;
    const m = NAME.exec(text);
    if (!m) return fail("expected a name");
    pos = NAME.lastIndex;
    return m[0];
  };
  /** Skips comments, processing instructions and white space between elements; text content is not allowed. */
  const skipMisc = (allowDoctype: boolean) => {
    for (;;) {
      skipSpace();
      if (text.startsWith("<!--", pos)) {
        const end = text.indexOf("-->", pos + 4);
        if (end === -1) fail("a comment is never closed");
        pos = end + 3;
      } else if (text.startsWith("<?", pos)) {
        const end = text.indexOf("?>", pos + 2);
        if (end === -1) fail("a <? ... ?> declaration is never closed");
        pos = end + 2;
      } else if (allowDoctype && text.startsWith("<!DOCTYPE", pos)) {
        const end = text.indexOf(">", pos);
        if (end === -1) fail("the DOCTYPE is never closed");
        pos = end + 1;
      } else return;
    }
  };
  const readElement = (depth: number): XmlElement => {
    if (depth > 64) fail("elements nest more than 64 deep");
    const start = pos;
    if (text[pos] !== "<") fail(text.slice(pos, pos + 1).trim() === "" ? "expected an element" : "text outside an attribute is not expected here");
    pos++;
    const el: XmlElement = { name: readName(), attrs: new Map(), children: [], line: lineAt(start) };
    for (;;) {
      skipSpace();
      if (text.startsWith("/>", pos)) {
        pos += 2;
        return el;
      }
      if (text[pos] === ">") {
        pos++;
        break;
      }
      if (pos >= text.length) fail(`<${el.name}> is never closed`, start);
      const attrAt = pos;
      const key = readName();
      skipSpace();
      if (text[pos] !== "=") fail(`attribute ${key} has no value`);
      pos++;
      skipSpace();
      const quote = text[pos];
      if (quote !== '"' && quote !== "'") return fail(`the value of ${key} must be quoted`);
      const end = text.indexOf(quote, pos + 1);
      if (end === -1) fail(`the value of ${key} is never closed`, attrAt);
      if (el.attrs.has(key)) fail(`attribute ${key} is given twice`, attrAt);
      el.attrs.set(key, decode(text.slice(pos + 1, end), lineAt(attrAt)));
      pos = end + 1;
    }
    for (;;) {
      skipMisc(false);
      if (text.startsWith("</", pos)) {
        pos += 2;
        const name = readName();
        if (name !== el.name) fail(`</${name}> closes <${el.name}> (line ${el.line})`);
        skipSpace();
        if (text[pos] !== ">") fail(`</${name}> is not closed with >`);
        pos++;
        return el;
      }
      if (pos >= text.length) fail(`<${el.name}> is never closed`, start);
      el.children.push(readElement(depth + 1));
    }
  };
  skipMisc(true);
  const root = readElement(0);
  skipMisc(false);
  if (pos < text.length) fail("content after the root element");
  return root;
}
