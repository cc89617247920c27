// `regent review`'s HTML page in a real browser: Debian's headless Chromium,
// driven by playwright-core (issue 35, "How it is checked").
//
// For examples/manage_files and examples/team_ops it writes the page with the
// real binary, serves it from 127.0.0.1 (with a Content-Security-Policy that
// allows inline styles and nothing else) and checks that
// - it renders with no console error or warning, no page error, and no
//   request but the page itself (self-contained);
// - manage_files' table, found by its caption and read by table semantics
//   (column headers, the row header), shows `delete` destructive, with its
//   confirmation question;
// - the keyboard works: Tab reaches the skip link, then the contents' links;
//   following one scrolls to the tool and moves focus there, and the next Tab
//   reaches its table's scrolling region;
// - axe-core finds no violation, in the light and the dark colour scheme;
// - under print media every table is still shown and the navigation is not.
// Screenshots (screen and print) and a PDF go to REGENT_BROWSER_ARTIFACTS
// (default target/browser-artifacts), with the HTML itself.
//
// Run: `npm ci` here, then `node --test tests/browser/review.mjs` from the
// repository (REGENT: the binary, default target/debug/regent; CHROMIUM:
// the browser, default /usr/bin/chromium). .ci/run does both.

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const regent = resolve(root, process.env.REGENT ?? "target/debug/regent");
const artifacts = resolve(root, process.env.REGENT_BROWSER_ARTIFACTS ?? "target/browser-artifacts");
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

// The page needs nothing but its own inline CSS: any script, image, font,
// stylesheet or frame it tried to load would be a CSP violation, which
// Chromium reports on the console (and the console must stay clean).
const CSP = "default-src 'none'; style-src 'unsafe-inline'";

// The machine's network is closed: without these Chromium keeps trying to
// reach Google's hosts at start. Playwright gives it a fresh profile.
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const EXAMPLES = ["manage_files", "team_ops"];

let browser;
let server;
let origin;
/** Paths the server was asked for that are not a review page. */
const stray = [];

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  const pages = new Map();
  for (const name of EXAMPLES) {
    const file = join(artifacts, `${name}.html`);
    // From the repository, so that locations in the page are relative.
    execFileSync(regent, ["review", `examples/${name}`, "-o", file], { cwd: root, stdio: "inherit" });
    pages.set(`/${name}.html`, readFileSync(file));
  }
  server = createServer((req, res) => {
    const body = pages.get(req.url);
    if (!body) {
      stray.push(req.url);
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": CSP,
    });
    res.end(body);
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  origin = `http://127.0.0.1:${server.address().port}`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    args: FLAGS,
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

/**
 * Opens a review page in a new context and records everything that would
 * make it not clean: console errors and warnings, page errors, requests
 * other than the page, failed requests.
 */
async function open(name, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  const url = `${origin}/${name}.html`;
  const problems = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("request", (r) => {
    if (r.url() !== url) problems.push(`a request that is not the page: ${r.method()} ${r.url()}`);
  });
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  const response = await page.goto(url, { waitUntil: "load" });
  assert.equal(response.status(), 200);
  return { context, page, problems };
}

/** Runs axe-core in the page (every rule it runs by default) and returns its violations, one line each. */
async function axe(page) {
  // Evaluated through the DevTools protocol, which the page's CSP does not
  // govern (a <script> tag, page.addScriptTag, would be refused by it).
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  return result.violations.map(
    (v) =>
      `${v.id} (${v.impact}): ${v.help} [${v.helpUrl}]\n` +
      v.nodes
        .slice(0, 5)
        .map((n) => `    ${n.target.join(" ")}: ${n.failureSummary.replace(/\n\s*/g, "; ")}`)
        .join("\n"),
  );
}

/** The cells of one row of the table captioned `caption`, by column header (the row header under its column's header). */
async function rowByHeader(page, caption, rowHeaderPrefix) {
  return page.evaluate(
    ([caption, prefix]) => {
      const text = (el) => el.textContent.replace(/\s+/g, " ").trim();
      const table = [...document.querySelectorAll("table")].find((t) => t.caption && text(t.caption) === caption);
      if (!table) return { error: `no table captioned ${caption}` };
      const headers = [...table.tHead.rows[0].cells].map((c) => {
        if (c.tagName !== "TH" || c.scope !== "col") throw new Error(`a header cell that is not th scope=col: ${c.outerHTML}`);
        return text(c);
      });
      const rows = [...table.tBodies[0].rows].filter((r) => {
        const h = r.cells[0];
        return h.tagName === "TH" && h.scope === "row" && text(h).startsWith(prefix);
      });
      if (rows.length !== 1) return { error: `${rows.length} rows whose header starts with ${prefix}` };
      const cells = {};
      let column = 0;
      for (const cell of rows[0].cells) {
        cells[headers[column]] = text(cell);
        column += cell.colSpan;
      }
      return { cells };
    },
    [caption, rowHeaderPrefix],
  );
}

/**
 * A screenshot of the page from its top, at most SHOT_HEIGHT pixels tall: a
 * large catalog's page is tens of thousands of pixels, slow to encode and
 * useless to look at whole (the HTML beside it is the full record).
 */
const SHOT_HEIGHT = 4000;
async function shot(page, file) {
  const { width, height } = await page.evaluate(() => ({
    width: document.documentElement.scrollWidth,
    height: document.documentElement.scrollHeight,
  }));
  await page.screenshot({
    path: join(artifacts, file),
    fullPage: true,
    clip: { x: 0, y: 0, width, height: Math.min(height, SHOT_HEIGHT) },
  });
}

for (const name of EXAMPLES) {
  // One page per example, checked in turn: loading it again for each check
  // would only repeat the first one.
  describe(`the review of examples/${name}`, () => {
    let context, page, problems;
    before(async () => ({ context, page, problems } = await open(name)));
    after(async () => context?.close());

    test("renders with no console error, page error or request but the page", async () => {
      assert.equal(await page.title(), "regent review");
      // Every tool listed in the contents has its table.
      const listed = await page.locator("nav a").count();
      assert.equal(await page.locator("main table").count(), listed - 1, "a table per tool (and a link to the findings)");
      await shot(page, `${name}.screen.png`);
      assert.deepEqual(problems, []);
      assert.deepEqual(stray, []);
    });

    for (const colorScheme of ["light", "dark"]) {
      test(`axe-core finds no accessibility violation (${colorScheme} colour scheme)`, async () => {
        await page.emulateMedia({ colorScheme });
        const violations = await axe(page);
        assert.deepEqual(violations, [], `axe-core:\n${violations.join("\n")}`);
        if (colorScheme === "dark") await shot(page, `${name}.dark.png`);
        assert.deepEqual(problems, []);
      });
    }

    test("prints its tables, without the navigation", async () => {
      await page.emulateMedia({ media: "print", colorScheme: "light" });
      const tables = page.locator("main table");
      const count = await tables.count();
      assert.ok(count > 0);
      // Paper does not scroll: each table is shown whole, within the page's width.
      const width = await page.evaluate(() => document.documentElement.clientWidth);
      for (let i = 0; i < count; i++) {
        assert.ok(await tables.nth(i).isVisible(), `table ${i + 1} of ${count} is hidden in print`);
        const box = await tables.nth(i).boundingBox();
        assert.ok(box.height > 0 && box.width > 0);
        assert.ok(box.x >= 0 && box.x + box.width <= width + 1, `table ${i + 1} of ${count} is wider than the page (${box.x + box.width} > ${width})`);
      }
      assert.equal(await page.locator("nav").isVisible(), false, "the contents are not printed");
      assert.equal(await page.locator("a.skip").isVisible(), false);
      await shot(page, `${name}.print.png`);
      await page.pdf({ path: join(artifacts, `${name}.pdf`), format: "A4", landscape: true });
      assert.deepEqual(problems, []);
    });
  });
}

describe("examples/manage_files in the browser", () => {
  test("the delete row shows destructiveHint true and its confirmation", async () => {
    const { context, page, problems } = await open("manage_files");
    const { cells, error } = await rowByHeader(page, "Decisions of manage_files", 'action="delete"');
    assert.equal(error, undefined, error);
    assert.equal(cells.arguments, 'action="delete", path="x"');
    assert.equal(cells.destructiveHint, "true");
    assert.equal(cells.readOnlyHint, "false");
    // The row's representative (path="x") is not denied: its own reasons
    // would stand alone. A test case's other value of the class is, and is
    // shown as such (`for …:`).
    assert.equal(
      cells.deny,
      'for content absent, path="/etc/passwd": path "/etc/passwd" is absolute; paths are relative to the root directory',
      "only another value of the class is denied, not delete of x",
    );
    assert.equal(cells.confirm, 'delete "x" under the root directory? This cannot be undone.');
    assert.match(cells["set by"], /confirm: tools\.manage_files\.confirm \(examples\/manage_files\/manage_files\.rego:\d+:\d+\)/);
    // The same, as assistive technology sees it: the table by its
    // accessible name, the row by its row header, the cell by its column.
    const table = page.getByRole("table", { name: "Decisions of manage_files" });
    const row = table.getByRole("row").filter({ has: page.getByRole("rowheader", { name: /^action="delete"/ }) });
    await assert.doesNotReject(row.waitFor({ state: "visible", timeout: 5000 }));
    await context.close();
    assert.deepEqual(problems, []);
  });

  test("the keyboard reaches the contents and a link moves focus to the tool", async () => {
    const { context, page, problems } = await open("manage_files");
    const focused = () =>
      page.evaluate(() => {
        const a = document.activeElement;
        return { tag: a.tagName, href: a.getAttribute("href"), id: a.id, text: a.textContent.trim().slice(0, 60) };
      });
    // The first Tab lands on the skip link, which then shows.
    await page.keyboard.press("Tab");
    assert.equal((await focused()).href, "#main");
    assert.ok(await page.locator("a.skip").isVisible());
    assert.ok((await page.locator("a.skip").boundingBox()).x >= 0, "the focused skip link is on screen");
    // Tab on to the contents' link for manage_files (a bounded walk).
    let reached = false;
    for (let i = 0; i < 10 && !reached; i++) {
      await page.keyboard.press("Tab");
      reached = (await focused()).href === "#tool-manage_files";
    }
    assert.ok(reached, "Tab reaches the contents' link to manage_files");
    // A small window, so that the tool's section starts below the fold.
    await page.setViewportSize({ width: 800, height: 300 });
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => location.hash === "#tool-manage_files");
    const f = await focused();
    assert.equal(f.id, "tool-manage_files", `focus moved to the tool's section, not ${JSON.stringify(f)}`);
    const top = await page.locator("#tool-manage_files").evaluate((s) => s.getBoundingClientRect().top);
    assert.ok(Math.abs(top) < 2, `the tool's section is scrolled to the top of the window (top ${top})`);
    assert.ok(await page.evaluate(() => window.scrollY > 0));
    // Tab goes on from the tool: to its table's scrolling region, named by the caption.
    await page.keyboard.press("Tab");
    const region = await page.evaluate(() => {
      const a = document.activeElement;
      return { role: a.getAttribute("role"), name: document.getElementById(a.getAttribute("aria-labelledby"))?.textContent };
    });
    assert.deepEqual(region, { role: "region", name: "Decisions of manage_files" });
    // The skip link moves focus to the tables too.
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.locator("a.skip").focus();
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.activeElement.id === "main");
    await context.close();
    assert.deepEqual(problems, []);
  });
});
