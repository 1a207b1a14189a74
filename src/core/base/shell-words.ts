// Shell words: how a command line in a message or a config file splits into
// arguments, and how an argument is written so that it splits back the same.

/** Splits a shell command into words and the operators between commands (`&&`, `||`, `;`, `|`). */
export function shellWords(cmd: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < cmd.length; i++) {
    const ch = cmd[i] ?? "";
    if (ch === "'") {
      const end = cmd.indexOf("'", i + 1);
      word += cmd.slice(i + 1, end === -1 ? cmd.length : end);
      i = end === -1 ? cmd.length : end;
      inWord = true;
    } else if (ch === '"') {
      i++;
      for (; i < cmd.length && cmd[i] !== '"'; i++) {
        if (cmd[i] === "\\" && /["\\$`]/.test(cmd[i + 1] ?? "")) i++;
        word += cmd[i];
      }
      inWord = true;
    } else if (ch === "\\" && i + 1 < cmd.length) {
      i++;
      if (cmd[i] !== "\n") word += cmd[i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else if (/[;&|]/.test(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      const two = cmd.slice(i, i + 2);
      if (two === "&&" || two === "||") {
        words.push(two);
        i++;
      } else words.push(ch);
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** `word` as one shell argument: bare when it is plain, else single-quoted. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", "'\\''")}'`;
}
