#!/usr/bin/env node
// pscheck parses PowerShell scripts with a real PowerShell grammar
// (tree-sitter-powershell, run by web-tree-sitter) and fails on any syntax
// error. It is how swdt checks, without Windows, that every script it sends
// to a node parses.
//
// Usage: node check.mjs FILE|DIR...
// Directories are searched recursively for *.ps1. Each ERROR or MISSING node
// is printed as "file:line:column: syntax error near ..." (1-based line and
// column). Exit status: 0 all parsed, 1 a syntax error, 2 usage or setup
// error.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Language, Parser } from 'web-tree-sitter';

const require = createRequire(import.meta.url);

// The grammar is a 1 MB wasm module. V8 first compiles it with its baseline
// compiler, then recompiles it optimised in the background, and the process
// cannot exit until that is done: ~10 s of CPU for a check that parses in
// milliseconds. Baseline code is plenty fast for a few scripts.
setFlagsFromString('--liftoff-only');

function usage(msg) {
  if (msg) console.error(`pscheck: ${msg}`);
  console.error('usage: node check.mjs FILE|DIR...');
  process.exit(2);
}

function collect(path, out) {
  let st;
  try {
    st = statSync(path);
  } catch (err) {
    usage(`${path}: ${err.message}`);
  }
  if (st.isDirectory()) {
    for (const name of readdirSync(path).sort()) {
      const child = join(path, name);
      if (name.endsWith('.ps1') || statSync(child).isDirectory()) collect(child, out);
    }
  } else {
    out.push(path);
  }
}

// innermost narrows an ERROR node to the first ERROR or MISSING node nested
// in it. Error recovery often wraps a whole enclosing block (a try { } from
// the prelude) in one ERROR node; the nested one points at the real mistake.
function innermost(node) {
  for (const child of node.children) {
    if (child.isError || child.isMissing) return innermost(child);
    if (child.hasError) {
      const inner = innermost(child);
      if (inner !== child) return inner;
    }
  }
  return node;
}

// problems returns every ERROR and MISSING node under root, in source order.
function problems(root) {
  const found = [];
  if (!root.hasError) return found;
  const cursor = root.walk();
  let descend = true;
  for (;;) {
    const node = cursor.currentNode;
    if (descend && (node.isError || node.isMissing)) {
      found.push(innermost(node));
      descend = false; // one report per broken region
    } else if (descend && node.hasError && cursor.gotoFirstChild()) {
      continue;
    }
    descend = true;
    if (cursor.gotoNextSibling()) continue;
    let up = false;
    while (cursor.gotoParent()) {
      if (cursor.gotoNextSibling()) {
        up = true;
        break;
      }
    }
    if (!up) break;
  }
  return found;
}

// describe renders one problem as "line:column: syntax error near ...".
function describe(node, lines) {
  const { row, column } = node.startPosition;
  const line = lines[row] ?? '';
  // tree-sitter counts bytes; report characters, as editors do.
  const col = Buffer.from(line, 'utf8').subarray(0, column).toString('utf8').length + 1;
  let near = line.slice(col - 1).trim();
  if (near === '') near = line.trim();
  if (near.length > 40) near = near.slice(0, 40) + '...';
  const what = node.isMissing ? `missing ${JSON.stringify(node.type)}` : 'syntax error';
  return `${row + 1}:${col}: ${what} near ${JSON.stringify(near)}`;
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length === 0 || args.includes('-h') || args.includes('--help')) usage();
  const files = [];
  for (const a of args) collect(a, files);
  if (files.length === 0) usage('no .ps1 files found');

  await Parser.init();
  const wasm = require.resolve('tree-sitter-powershell/tree-sitter-powershell.wasm');
  const language = await Language.load(wasm);
  const parser = new Parser();
  parser.setLanguage(language);

  let passed = 0;
  let failed = 0;
  for (const file of files) {
    let src = readFileSync(file, 'utf8');
    if (src.charCodeAt(0) === 0xfeff) src = src.slice(1);
    const tree = parser.parse(src);
    const found = problems(tree.rootNode);
    const rel = relative(process.cwd(), file);
    const name = rel && !rel.startsWith('..') ? rel : file;
    if (found.length === 0) {
      passed++;
    } else {
      failed++;
      const lines = src.split(/\r?\n/);
      for (const node of found) console.log(`${name}:${describe(node, lines)}`);
    }
    tree.delete();
  }
  console.log(`pscheck: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(`pscheck: ${err.stack || err}`);
  process.exit(2);
});
