// Drives the built-in target's journey (log in, list the items, open one) in Debian's
// Chromium, headless, and records it as HAR with Playwright's recorder: a real browser's
// recording for crates/cli/tests/import.rs. Usage: node record-har.js BASE_URL OUT.har
// (NODE_PATH must find playwright-core; CHROMIUM names the browser [/usr/bin/chromium]).
const { chromium } = require('playwright-core');

const [base, har] = process.argv.slice(2);

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ recordHar: { path: har, content: 'embed' } });
  const page = await context.newPage();
  await page.goto(base + '/status');
  // The page's own script, as a single-page app would run it: same origin, so the login's
  // session cookie is the browser's too.
  await page.evaluate(async () => {
    const pause = (ms) => new Promise((r) => setTimeout(r, ms));
    const login = await fetch('/login', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ user: 'alice', password: 'x' }),
    });
    const { token } = await login.json();
    await pause(200);
    const list = await fetch('/items', { headers: { Authorization: 'Bearer ' + token } });
    const { items } = await list.json();
    await pause(300);
    const one = await fetch('/items/' + items[3].id, { headers: { Authorization: 'Bearer ' + token } });
    await one.json();
  });
  await context.close();
  await browser.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
