// Watches loadmark's live dashboard in Debian's Chromium (playwright-core, no browser
// download) for crates/cli/tests/dashboard.rs and prints what each page saw as JSON; the Rust
// test holds the expectations. Usage: node dashboard.js URL PAGES SHOT.png [READY_FILE]
// With READY_FILE, that file is written once the browser is up, before the pages load URL: a
// test starts loadmark only then, so Chromium's start-up is not taken from the run's.
// Opens PAGES pages on URL at once, waits (at most 90 s) until each has the final report,
// and reports per page: console messages, page errors, every request, window.lmLive, the
// tiles' text and each chart's points. NODE_PATH must find playwright-core; CHROMIUM names
// the browser [/usr/bin/chromium].
const { chromium } = require('playwright-core');

async function watch(context, url, shot) {
  const page = await context.newPage();
  const out = { console: [], errors: [], requests: [] };
  page.on('console', (m) => out.console.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => out.errors.push(String(e)));
  page.on('request', (r) => out.requests.push(r.url()));
  // loadmark may not listen yet (bench/live-cost starts the page first): try for 30 s.
  for (let tries = 0; ; tries++) {
    try { await page.goto(url); break; } catch (e) {
      if (tries >= 300) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // Seen while the run goes: at least one tick drawn before the end.
  await page.waitForFunction(() => window.lmLive && window.lmLive.ticks > 0, null, { timeout: 90000 });
  out.running = await page.evaluate(() => document.getElementById('status').textContent);
  await page.waitForFunction(() => window.lmLive.ended && window.lmLive.reportBytes > 0, null,
    { timeout: 90000 });
  out.live = await page.evaluate(() => window.lmLive);
  out.tiles = await page.evaluate(() => Object.fromEntries(
    Array.from(document.querySelectorAll('.tile b')).map((b) => [b.id, b.textContent])));
  out.status = await page.evaluate(() => document.getElementById('status').textContent);
  out.charts = await page.evaluate(() => Object.fromEntries(
    Array.from(document.querySelectorAll('.charts > div')).map((d) => {
      const canvas = d.querySelector('canvas');
      return [d.id, { drawn: !!canvas && canvas.getBoundingClientRect().width > 300,
        series: d.querySelectorAll('.u-legend .u-series').length - 1 }];
    })));
  out.report_link = await page.evaluate(() => {
    const a = document.getElementById('report-link');
    return a ? a.href : null;
  });
  if (shot) await page.screenshot({ path: shot, fullPage: true });
  return out;
}

(async () => {
  const [url, pages, shot, ready] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    if (ready) require('fs').writeFileSync(ready, 'up');
    const n = Number(pages);
    const all = await Promise.all(Array.from({ length: n }, (_, i) =>
      watch(context, url, i === 0 ? shot : null)));
    process.stdout.write(JSON.stringify(all));
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(e); process.exit(1); });
