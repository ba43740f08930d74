// The dashboard of `entitlements serve`: one page that reads the server's public JSON
// endpoints with the token the user gives once (kept in sessionStorage). Everything it
// shows is put in the page as text (textContent, createTextNode, setAttribute): no
// markup is ever built from data.
"use strict";

(function () {
  const TOKEN_KEY = "entitlements.token";
  const SVG_NS = document.getElementById("svg-namespace").namespaceURI;
  const DAY = 86400000;
  // Each render draws into a container of its own inside `viewRoot` (the page functions'
  // `view`): one overtaken by a newer render goes on drawing into a container no longer
  // in the page, never into the newer page.
  const viewRoot = document.getElementById("view");
  const statusLine = document.getElementById("status");
  const tokenPanel = document.getElementById("token-panel");
  const tokenForm = document.getElementById("token-form");
  const tokenInput = document.getElementById("token-input");
  const forgetButton = document.getElementById("forget-token");
  let waitingForToken = null;
  let renderCount = 0;

  // MARK: DOM helpers

  /** An element with attributes and children; strings become text nodes. */
  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    setAttributes(node, attributes);
    append(node, children);
    return node;
  }

  /** An SVG element with attributes and children. */
  function svg(tag, attributes, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttributes(node, attributes);
    append(node, children);
    return node;
  }

  function setAttributes(node, attributes) {
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }

  function append(node, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function setStatus(text, isError) {
    statusLine.textContent = text || "";
    statusLine.classList.toggle("error", Boolean(isError));
  }

  /**
   * A table: `columns` are [heading, (row) => cell content, class]; `rowAttributes(row)`
   * gives each row's attributes (the ids and values it shows, for tests and tools).
   */
  function table(caption, columns, rows, attributes, rowAttributes) {
    const head = el("tr", {}, columns.map(([heading, , cls]) => el("th", { scope: "col", class: cls }, heading)));
    const body = rows.map((row) =>
      el("tr", rowAttributes ? rowAttributes(row) : {}, columns.map(([, cell, cls]) => el("td", { class: cls }, cell(row)))));
    return el("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption },
      el("table", attributes || {}, el("thead", {}, head), el("tbody", {}, body)));
  }

  function card(title, ...children) {
    const id = "h-" + Math.random().toString(36).slice(2, 9);
    return el("section", { class: "card", "aria-labelledby": id }, el("h3", { id }, title), children);
  }

  function badge(yes, text) {
    return el("span", { class: "badge " + (yes ? "yes" : "no") }, text);
  }

  // MARK: Formats

  function date(ms) {
    if (ms === null || ms === undefined) return "";
    const d = new Date(Number(ms));
    if (isNaN(d.getTime())) return String(ms);
    return d.toISOString().slice(0, 16).replace("T", " ");
  }

  function day(ms) {
    return new Date(Number(ms)).toISOString().slice(0, 10);
  }

  function month(ms) {
    return new Date(Number(ms)).toISOString().slice(0, 7);
  }

  function integer(n) {
    return n === null || n === undefined ? "" : Number(n).toLocaleString("en-US");
  }

  /** Milli-units as units with two decimals. */
  function money(milli) {
    if (milli === null || milli === undefined) return "";
    return (Number(milli) / 1000).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }

  /** A short figure for an axis: 950, 13.5k, 2.1M. */
  function compact(n) {
    const abs = Math.abs(n);
    if (abs >= 1e6) return (n / 1e6).toFixed(abs >= 1e7 ? 0 : 1) + "M";
    if (abs >= 1e4) return (n / 1e3).toFixed(abs >= 1e5 ? 0 : 1) + "k";
    return String(Math.round(n * 100) / 100);
  }

  function text(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }

  function customerLink(id) {
    return el("a", { href: "#/customer/" + encodeURIComponent(id), class: "mono" }, id);
  }

  function userLink(id) {
    return el("a", { href: "#/user/" + encodeURIComponent(id), class: "mono" }, id);
  }

  // MARK: The API

  function token() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  /** Asks for the token (once per tab); resolves when one is given. */
  function askForToken(message) {
    tokenPanel.hidden = false;
    if (message) setStatus(message, true);
    tokenInput.focus();
    if (!waitingForToken) {
      waitingForToken = new Promise((resolve) => {
        tokenForm.addEventListener("submit", function submitted(event) {
          event.preventDefault();
          const value = tokenInput.value.trim();
          if (!value) return;
          sessionStorage.setItem(TOKEN_KEY, value);
          tokenInput.value = "";
          tokenPanel.hidden = true;
          forgetButton.hidden = false;
          tokenForm.removeEventListener("submit", submitted);
          waitingForToken = null;
          setStatus("");
          resolve();
        });
      });
    }
    return waitingForToken;
  }

  /**
   * A request to this server: `{status, json, text}`. A 401 asks for the token and
   * tries again with it (unless `options.quiet`). Never throws for an HTTP status;
   * throws for a network failure.
   */
  async function api(path, options) {
    for (let attempt = 0; attempt < 4; attempt++) {
      const headers = { Accept: "application/json" };
      const stored = token();
      if (stored) headers.Authorization = "Bearer " + stored;
      const init = { method: "GET", headers, cache: "no-store", credentials: "omit", redirect: "error" };
      if (options && options.body !== undefined) {
        init.method = options.method || "POST";
        headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(options.body);
      } else if (options && options.method) {
        init.method = options.method;
      }
      const response = await fetch(path, init);
      const body = await response.text();
      if (response.status === 401 && !(options && options.quiet)) {
        sessionStorage.removeItem(TOKEN_KEY);
        await askForToken(stored ? "The server refused that token: give another." : "");
        continue;
      }
      let json = null;
      try { json = body ? JSON.parse(body) : null; } catch (_) { json = null; }
      return { status: response.status, json, text: body };
    }
    return { status: 401, json: null, text: "" };
  }

  /** NDJSON lines of a feed answer. */
  function lines(answer) {
    return answer.text.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
  }

  /** Whether the answer says the server has no such endpoint (an older server). */
  function notAvailable(answer) {
    if (answer.status !== 404) return false;
    const error = answer.json && answer.json.error;
    return !error || /^no endpoint/.test(error.message || "");
  }

  function errorText(answer) {
    const error = answer.json && answer.json.error;
    return error ? error.code + ": " + error.message : "HTTP " + answer.status;
  }

  /** The whole lifecycle feed, page by page (at most `cap` lines). */
  async function lifecycleFeed(cap) {
    const all = [];
    let since = 0;
    while (all.length < cap) {
      const answer = await api("/lifecycle?since=" + since + "&limit=10000");
      if (answer.status !== 200) return { lines: all, error: errorText(answer) };
      const page = lines(answer);
      all.push(...page);
      if (page.length < 10000) break;
      since = page[page.length - 1].cursor;
    }
    return { lines: all, complete: all.length < cap };
  }

  // MARK: Charts

  /** A bar chart of `values` (one per interval) as an SVG figure. */
  function barChart(title, intervals, key, format, labelOf) {
    const width = 480, height = 180, left = 56, right = 8, top = 10, bottom = 26;
    const values = intervals.map((i) => Number(i[key] || 0));
    const max = Math.max(1, ...values);
    const step = (width - left - right) / Math.max(1, values.length);
    const y = (v) => top + (height - top - bottom) * (1 - v / max);
    const chart = svg("svg", {
      viewBox: "0 0 " + width + " " + height, role: "img",
      "aria-label": title + ": " + intervals.map((i, n) => labelOf(i.from) + " " + format(values[n])).join(", "),
    });
    chart.appendChild(svg("line", { class: "axis", x1: left, x2: width - right, y1: y(0), y2: y(0) }));
    chart.appendChild(svg("text", { x: left - 4, y: y(max) + 4, "text-anchor": "end" }, compact(format === money ? max / 1000 : max)));
    chart.appendChild(svg("text", { x: left - 4, y: y(0), "text-anchor": "end" }, "0"));
    values.forEach((value, n) => {
      const barHeight = Math.max(0, y(0) - y(value));
      chart.appendChild(svg("rect", {
        class: "bar", x: (left + n * step + step * 0.12).toFixed(2), y: y(value).toFixed(2),
        width: (step * 0.76).toFixed(2), height: barHeight.toFixed(2),
      }, svg("title", {}, labelOf(intervals[n].from) + ": " + format(value))));
    });
    if (intervals.length) {
      chart.appendChild(svg("text", { x: left, y: height - 8 }, labelOf(intervals[0].from)));
      chart.appendChild(svg("text", { x: width - right, y: height - 8, "text-anchor": "end" },
        labelOf(intervals[intervals.length - 1].from)));
    }
    return el("figure", { class: "chart", "data-chart": key }, el("figcaption", {}, title), chart);
  }

  // MARK: Overview

  const METRICS = [
    ["mrr", "MRR", money],
    ["activeSubscriptions", "Active subscriptions", integer],
    ["activeTrials", "Trials", integer],
    ["expirations", "Expirations", integer],
    ["refunds", "Refunds", integer],
  ];

  function startOfMonthsAgo(now, months) {
    const d = new Date(now);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - months, 1);
  }

  function startOfDaysAgo(now, days) {
    return Math.floor(now / DAY) * DAY - days * DAY;
  }

  /** The overview as of `at` (milliseconds or ISO 8601; now when absent): the intervals end there. */
  async function overview(view, at) {
    const given = at ? (/^\d+$/.test(at) ? Number(at) : Date.parse(at)) : NaN;
    const now = isNaN(given) ? Date.now() : given;
    const page = el("div", {}, el("h2", { tabindex: "-1" }, "Overview", isNaN(given) ? "" : " as of " + date(now)));
    view.appendChild(page);
    const monthly = await api("/metrics/summary?from=" + startOfMonthsAgo(now, 11) + "&to=" + now + "&interval=month");
    if (notAvailable(monthly)) {
      page.appendChild(card("Subscriptions", el("p", { class: "note", "data-metrics": "not-available" },
        "Metrics are not available: this server has no GET /metrics/summary.")));
    } else if (monthly.status !== 200 || !monthly.json) {
      page.appendChild(card("Subscriptions", el("p", { class: "error" }, "Metrics could not be read: " + errorText(monthly))));
    } else {
      const daily = await api("/metrics/summary?from=" + startOfDaysAgo(now, 29) + "&to=" + now + "&interval=day");
      const months = monthly.json.intervals || [];
      const days = daily.status === 200 && daily.json ? daily.json.intervals || [] : [];
      const current = months[months.length - 1] || {};
      const tiles = el("ul", { class: "tiles", "aria-label": "Now" });
      for (const [key, label, format] of [METRICS[0], METRICS[1], METRICS[2]]) {
        tiles.appendChild(el("li", { class: "tile", "data-metric": key, "data-value": text(current[key]) },
          el("span", { class: "label" }, label), el("span", { class: "figure" }, format(current[key] || 0))));
      }
      const sum = (list, key) => list.reduce((total, i) => total + Number(i[key] || 0), 0);
      for (const [key, label] of [["expirations", "Expirations, 30 days"], ["refunds", "Refunds, 30 days"]]) {
        const total = sum(days, key);
        tiles.appendChild(el("li", { class: "tile", "data-metric": key + "30d", "data-value": total },
          el("span", { class: "label" }, label), el("span", { class: "figure" }, integer(total))));
      }
      page.appendChild(tiles);
      const missing = monthly.json.currenciesWithoutRate || [];
      if (missing.length) {
        page.appendChild(el("p", { class: "note" }, "No exchange rate for " + missing.join(", ") + ": their amounts are left out of MRR."));
      }
      page.appendChild(el("h3", {}, "Last 12 months"));
      page.appendChild(el("div", { class: "charts", "data-range": "months" },
        METRICS.map(([key, label, format]) => barChart(label + " by month", months, key, format, month))));
      page.appendChild(el("h3", {}, "Last 30 days"));
      page.appendChild(el("div", { class: "charts", "data-range": "days" },
        METRICS.map(([key, label, format]) => barChart(label + " by day", days, key, format, day))));
      page.appendChild(el("details", {}, el("summary", {}, "The figures as a table"),
        table("Monthly figures", [["month", (i) => month(i.from)]].concat(
          METRICS.map(([key, label, format]) => [label, (i) => format(i[key]), "num"])), months, { "data-table": "months" },
        (i) => Object.assign({ "data-from": i.from }, ...METRICS.map(([key]) => ({ ["data-" + key.toLowerCase()]: text(i[key]) }))))));
    }
    page.appendChild(await webhooksCard());
    page.appendChild(await rejectionsCard(10));
  }

  // MARK: Webhooks and rejections

  async function webhooksCard() {
    const answer = await api("/webhooks");
    if (answer.status !== 200 || !answer.json) {
      return card("Webhook endpoints", el("p", { class: notAvailable(answer) ? "note" : "error" },
        notAvailable(answer) ? "Not available on this server." : "Could not be read: " + errorText(answer)));
    }
    const endpoints = answer.json.endpoints || [];
    if (!endpoints.length) return card("Webhook endpoints", el("p", { class: "note" }, "No webhook endpoint is configured."));
    return card("Webhook endpoints", table("Webhook endpoints", [
      ["endpoint", (e) => el("span", { class: "mono" }, e.url)],
      ["feed", (e) => e.feed],
      ["delivered", (e) => integer(e.deliveredCursor), "num"],
      ["last", (e) => integer(e.lastCursor), "num"],
      ["lag", (e) => integer(e.lag), "num"],
      ["failing since", (e) => date(e.failingSince)],
      ["attempts", (e) => integer(e.attempts), "num"],
      ["next attempt", (e) => date(e.nextAttemptAt)],
      ["last error", (e) => text(e.lastError)],
      ["failed lines", (e) => integer(e.failedLines), "num"],
    ], endpoints, { "data-table": "webhooks" }, (e) => ({ "data-endpoint": e.url, "data-feed": e.feed, "data-lag": text(e.lag) })));
  }

  async function rejectionsCard(limit) {
    const answer = await api("/rejections?limit=" + limit);
    if (answer.status !== 200 || !answer.json) {
      return card("Latest rejected inputs", el("p", { class: notAvailable(answer) ? "note" : "error" },
        notAvailable(answer) ? "Not available on this server." : "Could not be read: " + errorText(answer)));
    }
    const rows = answer.json.rejections || [];
    if (!rows.length) return card("Latest rejected inputs", el("p", { class: "note" }, "Nothing was rejected."));
    return card("Latest rejected inputs", table("Latest rejected inputs", [
      ["received", (r) => date(r.receivedAt)],
      ["code", (r) => el("code", {}, r.code)],
      ["message", (r) => r.message],
      ["bytes", (r) => integer(r.size), "num"],
      ["input begins", (r) => el("code", {}, text(r.excerpt).slice(0, 80))],
    ], rows, { "data-table": "rejections" }, (r) => ({ "data-rejection": r.id })));
  }

  async function webhooksPage(view) {
    view.appendChild(el("h2", { tabindex: "-1" }, "Webhooks"));
    view.appendChild(await webhooksCard());
  }

  async function rejectionsPage(view) {
    view.appendChild(el("h2", { tabindex: "-1" }, "Rejected inputs"));
    view.appendChild(await rejectionsCard(200));
  }

  // MARK: Finding a customer

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const ORDER_ID = /^[A-Z0-9]{6,20}$/;

  /** Tries the id as each kind of id an endpoint answers for, in turn. */
  async function find(view, id) {
    view.appendChild(el("h2", { tabindex: "-1" }, "Finding ", el("span", { class: "mono" }, id)));
    const enc = encodeURIComponent(id);
    const tries = [
      ["appTransactionId", "/customers/" + enc],
      ["originalTransactionId", "/customers?originalTransactionId=" + enc],
      ["transactionId", "/customers?transactionId=" + enc],
    ];
    if (UUID.test(id)) tries.push(["appAccountToken", "/customers?appAccountToken=" + enc]);
    tries.push(["app user id", "/users/" + enc]);
    // An order number from a receipt email (letters and digits): asked of Apple last.
    if (ORDER_ID.test(id)) tries.push(["order id", "/customers?orderId=" + enc]);
    const tried = [];
    for (const [kind, path] of tries) {
      // Only the admin token reads app users: a 401 there is no reason to ask for a token.
      const answer = await api(path, kind === "app user id" ? { quiet: true } : undefined);
      // Left for another page meanwhile: open nothing.
      if (!view.isConnected) return;
      if (answer.status === 200 && answer.json) {
        if (kind === "app user id") return route("#/user/" + enc, true);
        if (answer.json.appTransactionIds) {
          const ids = answer.json.appTransactionIds;
          if (ids.length === 1) return route("#/customer/" + encodeURIComponent(ids[0]), true);
          view.appendChild(card("Customers with the account token " + id, el("ul", {}, ids.map((c) => el("li", {}, customerLink(c))))));
          return;
        }
        return route("#/customer/" + encodeURIComponent(answer.json.appTransactionId), true);
      }
      // A 404 says only that nobody has the id, except for an order id: Apple is asked, and the
      // server says why it found nothing (no such order, or no appStoreServerAPI to ask with).
      const reason = answer.status === 403 || answer.status === 401 ? " (needs the admin token)"
        : answer.status === 404 && kind !== "order id" ? "" : " (" + errorText(answer) + ")";
      tried.push(kind + reason);
    }
    view.appendChild(el("p", { class: "error", "data-found": "none" },
      "No customer or app user has this id. Tried it as: " + tried.join(", ") + "."));
  }

  // MARK: A customer

  async function customerPage(view, id) {
    const enc = encodeURIComponent(id);
    const answer = await api("/customers/" + enc);
    if (answer.status !== 200 || !answer.json) {
      view.appendChild(el("h2", { tabindex: "-1" }, "Customer ", el("span", { class: "mono" }, id)));
      view.appendChild(el("p", { class: "error" }, errorText(answer)));
      return;
    }
    const customer = answer.json;
    view.appendChild(el("h2", { tabindex: "-1" }, "Customer ",
      el("span", { class: "mono", "data-field": "appTransactionId" }, customer.appTransactionId)));
    const facts = customerFacts(customer);
    view.appendChild(facts);
    view.appendChild(entitlementsCard(customer.entitlements || {}));
    view.appendChild(subscriptionsCard(customer.subscriptions || []));
    view.appendChild(purchasesCard(customer.purchases || []));
    view.appendChild(balancesCard(customer.balances || {}));
    const history = await api("/customers/" + encodeURIComponent(customer.appTransactionId) + "/history");
    view.appendChild(history.status === 200 && Array.isArray(history.json)
      ? timelineCard(history.json, customer, view)
      : card("Timeline", el("p", { class: "error" }, errorText(history))));
    const feed = await lifecycleFeed(100000);
    const own = new Set([customer.appTransactionId]);
    for (const s of customer.subscriptions || []) own.add("otid:" + s.originalTransactionId);
    const events = feed.lines.filter((e) => own.has(e.appTransactionId));
    view.appendChild(lifecycleCard(events, feed));
    view.appendChild(grantsCard(customer, events));
    const appUser = await appUserOf(customer, events);
    if (appUser !== null) {
      // Among the facts, after the account token: the app user, a link to its page.
      const list = facts.querySelector("dl");
      const after = ["appAccountToken", "environment", "appTransactionId"].map((k) => list.querySelector('[data-field="' + k + '"]')).find(Boolean);
      const next = after ? after.nextSibling : null;
      list.insertBefore(el("dt", {}, "app user"), next);
      list.insertBefore(el("dd", { class: "mono", "data-field": "appUserId" }, userLink(appUser)), next);
    }
  }

  function customerFacts(c) {
    const facts = [
      ["appTransactionId", c.appTransactionId], ["environment", c.environment], ["appAccountToken", c.appAccountToken],
      ["first purchase", date(c.originalPurchaseDate)],
      ["original app version", c.originalApplicationVersion], ["as of", date(c.at)],
    ].filter(([, v]) => v !== null && v !== undefined && v !== "");
    return card("Customer", el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", { class: "mono", "data-field": k }, text(v))])));
  }

  /**
   * The app user the customer belongs to, as far as this page can learn it, else null. The
   * customer's view does not say, and only the admin token reads app users (`GET /users/{id}`,
   * which lists an app user's customers). Asked in turn: the app user its latest TRANSFER
   * moved it to, then the one its appAccountToken names (`appUsers.fromAppAccountToken`);
   * the first that lists the customer is its app user. An operator's first link makes no
   * lifecycle event: a customer linked once to an app user of another id shows none.
   */
  async function appUserOf(customer, events) {
    const candidates = events.filter((e) => e.type === "TRANSFER" && e.to).map((e) => String(e.to)).reverse();
    if (customer.appAccountToken) candidates.push(String(customer.appAccountToken).toLowerCase());
    for (const id of new Set(candidates)) {
      // Without the admin token no app user can be read: no token is asked for, nothing is shown.
      const answer = await api("/users/" + encodeURIComponent(id), { quiet: true });
      if (answer.status === 401 || answer.status === 403) return null;
      const customers = answer.status === 200 && answer.json ? answer.json.customers || [] : [];
      if (customers.some((c) => c.appTransactionId === customer.appTransactionId)) return id;
    }
    return null;
  }

  function entitlementsCard(entitlements) {
    const rows = Object.entries(entitlements).map(([name, e]) => Object.assign({ name }, e));
    if (!rows.length) return card("Entitlements", el("p", { class: "note" }, "None."));
    return card("Entitlements", table("Entitlements", [
      ["entitlement", (e) => el("span", { class: "mono" }, e.name)],
      ["active", (e) => badge(e.active, e.active ? "yes" : "no")],
      ["expires", (e) => e.expiresDate ? date(e.expiresDate) : (e.active ? "no end" : "")],
      ["product", (e) => el("span", { class: "mono" }, text(e.productId))],
      ["source", (e) => text(e.source) + (e.grantId ? " " + e.grantId : "")],
    ], rows, { "data-table": "entitlements" },
    (e) => ({ "data-entitlement": e.name, "data-active": String(Boolean(e.active)), "data-expires": text(e.expiresDate) })));
  }

  function subscriptionsCard(subscriptions) {
    if (!subscriptions.length) return card("Subscriptions", el("p", { class: "note" }, "None."));
    return card("Subscriptions", table("Subscriptions", [
      ["originalTransactionId", (s) => el("span", { class: "mono" }, s.originalTransactionId)],
      ["product", (s) => el("span", { class: "mono" }, s.productId)],
      ["status", (s) => s.status],
      ["expires", (s) => date(s.expiresDate)],
      ["renews", (s) => s.willRenew === undefined ? text(s.autoRenewStatus) : (s.willRenew ? "yes" : "no")],
      ["renews as", (s) => el("span", { class: "mono" }, text(s.autoRenewProductId))],
      ["ownership", (s) => text(s.ownership)],
    ], subscriptions, { "data-table": "subscriptions" },
    (s) => ({ "data-subscription": s.originalTransactionId, "data-status": s.status, "data-expires": text(s.expiresDate) })));
  }

  function purchasesCard(purchases) {
    if (!purchases.length) return card("Purchases", el("p", { class: "note" }, "None."));
    return card("Purchases", table("Purchases", [
      ["transactionId", (p) => el("span", { class: "mono" }, text(p.transactionId))],
      ["product", (p) => el("span", { class: "mono" }, p.productId)],
      ["quantity", (p) => integer(p.quantity), "num"],
      ["purchased", (p) => date(p.purchaseDate)],
      ["revoked", (p) => p.revoked ? text(p.revocationType) || "yes" : "no"],
      ["window ends", (p) => date(p.expiresDate)],
    ], purchases, { "data-table": "purchases" }, (p) => ({ "data-purchase": text(p.transactionId) })));
  }

  function balancesCard(balances) {
    const rows = Array.isArray(balances) ? balances : Object.entries(balances).map(([currency, amount]) => ({ currency, amount }));
    if (!rows.length) return card("Balances", el("p", { class: "note" }, "None."));
    return card("Balances", table("Balances", [
      ["currency", (b) => el("span", { class: "mono" }, b.currency)],
      ["balance", (b) => integer(b.amount), "num"],
    ], rows, { "data-table": "balances" }, (b) => ({ "data-balance": b.currency, "data-value": text(b.amount) })));
  }

  // MARK: The timeline

  /**
   * The history drawn over time: a bar per entitlement while active, a band per
   * subscription coloured by status, a step line per balance.
   */
  function timelineCard(history, customer, view) {
    if (!history.length) return card("Timeline", el("p", { class: "note" }, "No history."));
    const now = Date.now();
    const times = history.map((h) => h.at);
    const start = Math.min(...times);
    const end = Math.max(now, ...times) + DAY;
    const rows = [];
    const byKey = new Map();
    for (const line of history) {
      let key, kind;
      if ("entitlement" in line) { key = "entitlement " + line.entitlement; kind = "entitlement"; }
      else if ("subscription" in line) { key = "subscription " + line.subscription; kind = "subscription"; }
      else if ("balance" in line) { key = "balance " + line.balance; kind = "balance"; }
      else continue;
      if (!byKey.has(key)) { byKey.set(key, { key, kind, lines: [] }); rows.push(byKey.get(key)); }
      byKey.get(key).lines.push(line);
    }
    // Narrow screens draw each row's label above its bars; wide ones beside them.
    const narrow = view.clientWidth < 600;
    const width = narrow ? Math.max(300, view.clientWidth - 24) : 960;
    const left = narrow ? 4 : 150, right = narrow ? 4 : 12, rowHeight = narrow ? 44 : 34, barTop = narrow ? 16 : 5, top = 8, axis = 26;
    const height = top + rows.length * rowHeight + axis;
    const x = (t) => left + (width - left - right) * (t - start) / Math.max(1, end - start);
    const chart = svg("svg", {
      viewBox: "0 0 " + width + " " + height, role: "img", "data-timeline": "",
      "aria-label": "Timeline of " + customer.appTransactionId + " from " + date(start) + " to " + date(end) + ": the table below lists each change.",
    });
    rows.forEach((row, n) => {
      const y = top + n * rowHeight;
      chart.appendChild(svg("text", { class: "row-label", x: 4, y: narrow ? y + 12 : y + rowHeight / 2 + 4 }, narrow ? row.key : shorten(row.key, 24)));
      chart.appendChild(svg("line", { class: "axis", x1: left, x2: width - right, y1: y + rowHeight - 2, y2: y + rowHeight - 2 }));
      if (row.kind === "balance") {
        const values = row.lines.map((l) => Number(l.value || 0)).concat(row.lines.map((l) => Number(l.previous || 0)));
        const max = Math.max(1, ...values);
        const vy = (v) => y + rowHeight - 4 - (rowHeight - barTop - 6) * v / max;
        let points = [];
        let value = Number(row.lines[0].previous || 0);
        points.push([x(start), vy(value)]);
        for (const l of row.lines) {
          points.push([x(l.at), vy(value)]);
          value = Number(l.value || 0);
          points.push([x(l.at), vy(value)]);
          chart.appendChild(svg("circle", { cx: x(l.at).toFixed(1), cy: vy(value).toFixed(1), r: 3, class: "bar" },
            svg("title", {}, date(l.at) + ": " + row.key + " " + integer(l.value) + " (was " + integer(l.previous) + ")")));
        }
        points.push([x(end), vy(value)]);
        chart.insertBefore(svg("polyline", { class: "step", points: points.map((p) => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ") }), chart.lastChild);
        return;
      }
      row.lines.forEach((l, i) => {
        const next = row.lines[i + 1];
        const until = next ? next.at : end;
        let cls, label;
        if (row.kind === "entitlement") {
          if (!l.active) return;
          cls = l.source === "grant" ? "ent-grant" : "ent-on";
          label = row.key + " active from " + date(l.at) + (next ? " to " + date(next.at) : "") +
            (l.expiresDate ? ", expires " + date(l.expiresDate) : "") + (l.productId ? ", " + l.productId : "");
        } else {
          const known = ["active", "grace_period", "billing_retry", "expired", "revoked"];
          cls = "st-" + (known.includes(l.status) ? l.status : "other");
          label = row.key + " " + l.status + " from " + date(l.at) + (next ? " to " + date(next.at) : "");
        }
        chart.appendChild(svg("rect", {
          class: cls, x: x(l.at).toFixed(1), y: y + barTop, width: Math.max(2, x(until) - x(l.at)).toFixed(1), height: rowHeight - barTop - 7, rx: 2,
        }, svg("title", {}, label)));
      });
    });
    const base = top + rows.length * rowHeight;
    chart.appendChild(svg("line", { class: "now", x1: x(now).toFixed(1), x2: x(now).toFixed(1), y1: top, y2: base }, svg("title", {}, "now")));
    chart.appendChild(svg("text", { x: left, y: base + 16 }, day(start)));
    chart.appendChild(svg("text", { x: width - right, y: base + 16, "text-anchor": "end" }, day(end)));
    const legend = el("ul", { class: "legend", "aria-label": "Legend" },
      [["ent-on", "entitlement active"], ["ent-grant", "granted"], ["st-active", "subscription active"],
        ["st-grace_period", "grace period"], ["st-billing_retry", "billing retry"], ["st-expired", "expired"],
        ["st-revoked", "revoked"], ["step", "balance"]].map(([cls, label]) =>
        el("li", {}, el("span", { class: "swatch " + cls, "aria-hidden": "true" }), label)));
    const list = table("Each change", [
      ["at", (h) => date(h.at)],
      ["what", (h) => el("span", { class: "mono" }, "entitlement" in h ? h.entitlement : "subscription" in h ? h.subscription : text(h.balance))],
      ["becomes", (h) => "entitlement" in h ? (h.active ? "active" + (h.expiresDate ? " until " + date(h.expiresDate) : "") : "inactive")
        : "subscription" in h ? text(h.status) + (h.previous ? " (was " + h.previous + ")" : "")
        : integer(h.value) + " (was " + integer(h.previous) + ")"],
      ["product", (h) => el("span", { class: "mono" }, text(h.productId))],
      ["cause", (h) => h.cause ? [h.cause.kind, h.cause.id, h.cause.field, h.cause.notificationType, h.cause.subtype].filter(Boolean).join(" ") : ""],
    ], history, { "data-table": "history" }, (h) => ({ "data-at": h.at }));
    return card("Timeline", chart, legend, el("details", {}, el("summary", {}, "Each change (" + history.length + ")"), list));
  }

  function shorten(value, length) {
    return value.length > length ? value.slice(0, length - 1) + "…" : value;
  }

  // MARK: Lifecycle and grants

  function lifecycleCard(events, feed) {
    const notes = [];
    if (feed.error) notes.push(el("p", { class: "error" }, "The lifecycle feed could not be read: " + feed.error));
    else if (!feed.complete) notes.push(el("p", { class: "note" }, "Only the first " + integer(feed.lines.length) + " lines of the feed were read."));
    if (!events.length) return card("Lifecycle events", notes, el("p", { class: "note" }, "None."));
    return card("Lifecycle events", notes, table("Lifecycle events", [
      ["effective", (e) => date(e.effectiveAt)],
      ["event", (e) => e.type],
      ["product", (e) => el("span", { class: "mono" }, text(e.productId))],
      ["price", (e) => e.price === undefined || e.price === null ? "" : money(e.price) + " " + text(e.currency), "num"],
      ["details", (e) => [e.periodType, e.reason, e.isTrialConversion ? "trial conversion" : "", e.grantId, e.fromProductId]
        .filter(Boolean).map(text).join(", ")],
      ["recorded", (e) => date(e.recordedAt)],
    ], events, { "data-table": "lifecycle" }, (e) => ({ "data-event": e.id })));
  }

  /** The grants the lifecycle feed shows for the customer, each still standing with a revoke button, and a form to grant. */
  function grantsCard(customer, events) {
    const grants = new Map();
    for (const e of events) {
      if (!e.grantId) continue;
      const g = grants.get(e.grantId) || { id: e.grantId, entitlements: e.entitlements || [], state: "" };
      if (e.type === "GRANT_STARTED") { g.from = e.effectiveAt; g.state = g.state || "active"; }
      if (e.type === "GRANT_ENDED") { g.until = e.effectiveAt; g.state = "ended"; }
      if (e.type === "GRANT_REVOKED") { g.revokedAt = e.effectiveAt; g.state = "revoked"; }
      grants.set(e.grantId, g);
    }
    for (const [name, e] of Object.entries(customer.entitlements || {})) {
      if (e.grantId && !grants.has(e.grantId)) grants.set(e.grantId, { id: e.grantId, entitlements: [name], state: e.active ? "active" : "" });
    }
    const message = el("p", { class: "note", role: "status", "aria-live": "polite" });
    const rows = Array.from(grants.values());
    const list = rows.length ? table("Grants", [
      ["grant", (g) => el("span", { class: "mono" }, g.id)],
      ["entitlements", (g) => g.entitlements.join(", ")],
      ["from", (g) => date(g.from)],
      ["state", (g) => g.state],
      ["", (g) => g.state === "active" ? el("button", { type: "button", class: "danger", "data-revoke": g.id }, "Revoke") : ""],
    ], rows, { "data-table": "grants" }, (g) => ({ "data-grant": g.id, "data-grant-state": g.state })) : el("p", { class: "note" }, "No grant.");
    onRevoke(list, message);
    const suggestions = Object.keys(customer.entitlements || {});
    const form = el("form", { class: "grant", "aria-label": "Grant an entitlement" },
      el("label", {}, "Entitlement", el("input", { name: "entitlement", required: true, value: suggestions[0] || "", spellcheck: "false" })),
      el("label", {}, "Days", el("input", { name: "days", type: "number", min: "1", max: "3650", value: "7", required: true })),
      el("label", {}, "Reason", el("input", { name: "reason", value: "" })),
      el("button", { type: "submit" }, "Grant"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const data = new FormData(form);
      const id = "dashboard-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 8);
      const body = { id, appTransactionId: customer.appTransactionId, entitlement: String(data.get("entitlement")), days: Number(data.get("days")) };
      if (data.get("reason")) body.reason = String(data.get("reason"));
      const granted = "Granted " + body.entitlement + " for " + body.days + " days (" + id + ").";
      operatorAction(form.querySelector("button[type=submit]"), message, "/grants", body, granted);
    });
    return card("Grants", list, el("h4", {}, "Grant"), form, message,
      el("p", { class: "note" }, "Granting and revoking need serve.adminToken."));
  }

  /** Revokes the grant of a `data-revoke` button clicked inside `node`, saying how it went in `message`. */
  function onRevoke(node, message) {
    node.addEventListener("click", (event) => {
      const button = event.target.closest("button[data-revoke]");
      if (!button) return;
      const id = button.getAttribute("data-revoke");
      operatorAction(button, message, "/grants/" + encodeURIComponent(id) + "/revoke", {}, "Revoked " + id + ".");
    });
  }

  /**
   * Sends an operator's request (`POST path` with `body`) pressed with `button`, which stays
   * disabled until the answer comes: a second press meanwhile would act twice. Says in
   * `message` how it went; once done, draws the page again, saying `success`.
   */
  async function operatorAction(button, message, path, body, success) {
    if (button.disabled) return;
    const focused = document.activeElement === button;
    button.disabled = true;
    let answer = null;
    try {
      answer = await api(path, { body });
    } catch (error) {
      message.className = "error";
      message.textContent = "The server could not be reached: " + (error && error.message ? error.message : String(error));
    }
    button.disabled = false;
    if (answer) {
      operatorAnswer(answer, message, success);
      if (answer.status === 200) return render(success);
    }
    // Disabling the focused button took the focus away: give it back, so that the keyboard stays there.
    if (focused) button.focus();
  }

  function operatorAnswer(answer, node, success) {
    if (answer.status === 200) { node.textContent = success; node.className = "note"; return; }
    node.className = "error";
    if (answer.status === 403) node.textContent = "This needs the admin token (serve.adminToken): give it with “Forget the token”, then reload.";
    else if (notAvailable(answer)) node.textContent = "Not available on this server.";
    else node.textContent = errorText(answer);
  }

  // MARK: An app user

  async function userPage(view, id) {
    view.appendChild(el("h2", { tabindex: "-1" }, "App user ", el("span", { class: "mono", "data-field": "appUserId" }, id)));
    const answer = await api("/users/" + encodeURIComponent(id));
    if (answer.status !== 200 || !answer.json) {
      view.appendChild(el("p", { class: "error" }, answer.status === 403 ? "Reading app users needs the admin token." : errorText(answer)));
      return;
    }
    const user = answer.json;
    view.appendChild(entitlementsCard(user.entitlements || {}));
    view.appendChild(card("Customers", (user.customers || []).length
      ? el("ul", {}, user.customers.map((c) => el("li", {}, customerLink(c.appTransactionId))))
      : el("p", { class: "note" }, "None.")));
    const grants = user.grants || [];
    const message = el("p", { class: "note", role: "status", "aria-live": "polite" });
    const list = grants.length ? table("Grants", [
      ["grant", (g) => el("span", { class: "mono" }, text(g.grantId))],
      ["entitlement", (g) => el("span", { class: "mono" }, text(g.entitlement))],
      ["from", (g) => date(g.from)],
      ["until", (g) => date(g.until)],
      ["revoked", (g) => date(g.revokedAt)],
      ["customer", (g) => g.appTransactionId ? customerLink(g.appTransactionId) : "the app user"],
      ["by", (g) => text(g.operator)],
      ["reason", (g) => text(g.reason)],
      ["", (g) => g.active ? el("button", { type: "button", class: "danger", "data-revoke": g.grantId }, "Revoke") : ""],
    ], grants, { "data-table": "grants" }, (g) => ({ "data-grant": g.grantId, "data-active": String(Boolean(g.active)) }))
      : el("p", { class: "note" }, "None.");
    onRevoke(list, message);
    view.appendChild(card("Grants", list, message));
    view.appendChild(balancesCard(user.balances || {}));
  }

  // MARK: Routing

  function route(hash, replace) {
    if (replace) history.replaceState(null, "", hash);
    else location.hash = hash;
    return render();
  }

  /** Draws the page the address names; `notice` (what an action just did) is said in the status line once it is drawn. */
  async function render(notice) {
    const current = ++renderCount;
    document.body.setAttribute("data-state", "loading");
    clear(viewRoot);
    const view = el("div", { class: "page" });
    viewRoot.appendChild(view);
    setStatus("Loading…");
    const hash = location.hash || "#/";
    const parts = hash.slice(2).split("/");
    const name = parts[0] || "overview";
    let arg = parts.length > 1 ? parts.slice(1).join("/") : "";
    try { arg = decodeURIComponent(arg); } catch (_) { /* a malformed escape: the text as written */ }
    for (const link of document.querySelectorAll("[data-nav]")) {
      if (link.getAttribute("data-nav") === name) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    try {
      if (name === "customer" && arg) await customerPage(view, arg);
      else if (name === "user" && arg) await userPage(view, arg);
      else if (name === "find" && arg) await find(view, arg);
      else if (name === "webhooks") await webhooksPage(view);
      else if (name === "rejections") await rejectionsPage(view);
      else await overview(view, name === "overview" ? arg : "");
      if (current !== renderCount) return;
      setStatus(notice || "");
    } catch (error) {
      if (current !== renderCount) return;
      setStatus("The server could not be reached: " + (error && error.message ? error.message : String(error)), true);
    }
    if (current !== renderCount) return;
    document.body.setAttribute("data-state", "ready");
    const heading = view.querySelector("h2");
    if (heading && document.activeElement !== tokenInput) heading.focus({ preventScroll: true });
  }

  // The skip link moves the focus only: following its "#main" would change the address and leave the page.
  document.querySelector("a.skip").addEventListener("click", (event) => {
    event.preventDefault();
    document.getElementById("main").focus();
  });
  document.getElementById("find").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = document.getElementById("find-id").value.trim();
    if (value) route("#/find/" + encodeURIComponent(value));
  });
  forgetButton.addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    forgetButton.hidden = true;
    askForToken("").then(() => render());
  });
  forgetButton.hidden = !token();
  window.addEventListener("hashchange", () => render());
  render();
})();
