// Drives the HTML report's interactive charts in Debian's Chromium (playwright-core, no
// browser download) for crates/report/tests/browser.rs, and prints what it saw as JSON; the
// Rust test holds the expectations. Usage: node interact.js JOBS.json
// JOBS.json: [{"page": "/abs/x.html", "shot": "/abs/x.png",
//              "hover": [{"chart": "rps", "x": 2, "linked": ["latency-over-time"]}],
//              "zoom": "rps", "toggle": "latency-over-time"}]
// NODE_PATH must find playwright-core; CHROMIUM names the browser [/usr/bin/chromium].
const { chromium } = require('playwright-core');
const fs = require('fs');

async function hover(page, h) {
  return page.evaluate(async (h) => {
    const u = window.lmCharts[h.chart];
    u.root.scrollIntoView({ block: 'center' });
    await new Promise((r) => requestAnimationFrame(() => r()));
    const box = u.over.getBoundingClientRect();
    return { x: box.left + u.valToPos(h.x, 'x'), y: box.top + box.height / 2 };
  }, h).then(async (at) => {
    await page.mouse.move(at.x, at.y);
    await page.waitForTimeout(50);
    return page.evaluate((h) => {
      const read = (id) => {
        const u = window.lmCharts[id];
        return {
          idx: u.cursor.idx,
          x: u.cursor.idx == null ? null : u.data[0][u.cursor.idx],
          legend: Array.from(u.root.querySelectorAll('.u-legend .u-series')).map(
            (row) => row.querySelector('.u-value').textContent),
        };
      };
      const out = read(h.chart);
      out.chart = h.chart;
      out.linked = (h.linked || []).map((id) => Object.assign({ chart: id }, read(id)));
      return out;
    }, h);
  });
}

async function zoom(page, id) {
  const geo = await page.evaluate((id) => {
    const u = window.lmCharts[id];
    u.root.scrollIntoView({ block: 'center' });
    const b = u.over.getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height,
      before: [u.scales.x.min, u.scales.x.max] };
  }, id);
  const y = geo.top + geo.height / 2;
  await page.mouse.move(geo.left + geo.width * 0.25, y);
  await page.mouse.down();
  await page.mouse.move(geo.left + geo.width * 0.5, y, { steps: 5 });
  await page.mouse.move(geo.left + geo.width * 0.75, y, { steps: 5 });
  await page.mouse.up();
  await page.waitForTimeout(50);
  const zoomed = await page.evaluate((id) => {
    const u = window.lmCharts[id];
    return [u.scales.x.min, u.scales.x.max];
  }, id);
  await page.mouse.dblclick(geo.left + geo.width * 0.5, y);
  await page.waitForTimeout(50);
  const reset = await page.evaluate((id) => {
    const u = window.lmCharts[id];
    return [u.scales.x.min, u.scales.x.max];
  }, id);
  return { chart: id, before: geo.before, zoomed, reset };
}

async function toggle(page, id) {
  const row = await page.evaluateHandle((id) => {
    const u = window.lmCharts[id];
    u.root.scrollIntoView({ block: 'center' });
    return u.root.querySelectorAll('.u-legend .u-series')[1];
  }, id);
  const before = await page.evaluate((id) => window.lmCharts[id].series[1].show, id);
  await row.asElement().click();
  const after = await page.evaluate((id) => ({
    show: window.lmCharts[id].series[1].show,
    off: window.lmCharts[id].root.querySelectorAll('.u-legend .u-series')[1].classList.contains('u-off'),
  }), id);
  await row.asElement().click();
  const again = await page.evaluate((id) => window.lmCharts[id].series[1].show, id);
  return { chart: id, label: await page.evaluate((id) => window.lmCharts[id].series[1].label, id),
    before, after: after.show, off: after.off, again };
}

async function run(browser, job) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 900 } });
  const page = await context.newPage();
  const out = { page: job.page, console: [], errors: [], requests: [] };
  page.on('console', (m) => out.console.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => out.errors.push(String(e)));
  page.on('request', (r) => out.requests.push(r.url()));
  await page.goto('file://' + job.page);
  await page.waitForLoadState('load');
  out.charts = await page.evaluate(() => {
    const res = {};
    for (const [id, u] of Object.entries(window.lmCharts || {})) {
      const fig = u.root.closest('figure');
      const svg = fig.querySelector('svg');
      const canvas = u.root.querySelector('canvas');
      res[id] = {
        width: Math.round(u.root.getBoundingClientRect().width),
        height: Math.round(canvas.getBoundingClientRect().height),
        series: u.series.length - 1,
        points: u.data[0].length,
        svg_hidden: getComputedStyle(svg).display === 'none',
        log: u.scales.y.distr === 3,
      };
    }
    return res;
  });
  out.figures = await page.evaluate(() =>
    Array.from(document.querySelectorAll('figure.chart')).map((f) => f.dataset.chart));
  out.hover = [];
  for (const h of job.hover || []) out.hover.push(await hover(page, h));
  if (job.zoom) out.zoom = await zoom(page, job.zoom);
  if (job.toggle) out.toggle = await toggle(page, job.toggle);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: job.shot, fullPage: true });
  // Print: the SVGs again, the canvases hidden.
  await page.emulateMedia({ media: 'print' });
  out.print = await page.evaluate(() => {
    const f = document.querySelector('figure.lm-on');
    return {
      svg: getComputedStyle(f.querySelector('svg')).display,
      plot: getComputedStyle(f.querySelector('.lm-plot')).display,
    };
  });
  await context.close();
  // Without script: the SVGs, laid out, and no interactive chart.
  const plain = await browser.newContext({ javaScriptEnabled: false });
  const still = await plain.newPage();
  await still.goto('file://' + job.page);
  out.noscript = await still.evaluate(() => ({
    plots: document.querySelectorAll('.lm-plot').length,
    svgs: Array.from(document.querySelectorAll('figure.chart > svg')).filter(
      (s) => s.getBoundingClientRect().width > 250).length,
  }));
  await plain.close();
  return out;
}

async function main() {
  const jobs = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const results = [];
  for (const job of jobs) results.push(await run(browser, job));
  await browser.close();
  process.stdout.write(JSON.stringify(results));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
