/* form_outbox browser client: keeps a visitor's message until the server has answered.
   Served by the form_outbox handler (browserclient/serve.go); no dependencies. */
(function () {
  "use strict";
  var NS = "form_outbox:", PENDING = NS + "pending", TIMEOUT = 15000, MAX_WAIT = 30000;
  var timers = {}, tokens = {}, proofs = {};

  function get(k) {
    try { return JSON.parse(localStorage.getItem(k)); } catch (e) { return null; }
  }
  function put(k, v) {
    // Storage can be full or disabled (private mode); the post still goes out, it just
    // does not survive a reload.
    try { v == null ? localStorage.removeItem(k) : localStorage.setItem(k, JSON.stringify(v)); } catch (e) {}
  }
  function pending() { return get(PENDING) || {}; }
  function setPending(key, p) {
    var all = pending();
    if (p) all[key] = p; else delete all[key];
    put(PENDING, all);
  }
  function newKey() {
    return crypto.randomUUID ? crypto.randomUUID() :
      Date.now().toString(36) + Math.random().toString(36).slice(2);
  }

  // formID names a form across page loads: its action URL and its id (or its position).
  function formID(f) {
    var all = document.querySelectorAll("form[data-form-outbox]");
    return f.action + "#" + (f.id || [].indexOf.call(all, f));
  }
  function byID(id) {
    var all = document.querySelectorAll("form[data-form-outbox]");
    for (var i = 0; i < all.length; i++) if (formID(all[i]) === id) return all[i];
    return null;
  }

  // A field is kept in the draft unless it is a honeypot (hidden from people with
  // aria-hidden or tabindex=-1), hidden, a password, a file, or opted out.
  function drafted(el) {
    return el.name && !/^(hidden|password|file|submit|button|reset|image)$/.test(el.type) &&
      el.tabIndex !== -1 && !el.closest("[aria-hidden=true],[data-form-outbox-nodraft]");
  }
  function draftOn(f) { return f.getAttribute("data-form-outbox-draft") !== "off"; }
  function saveDraft(f) {
    if (!draftOn(f)) return;
    var d = {};
    [].forEach.call(f.elements, function (el) {
      if (!drafted(el)) return;
      if (/^(checkbox|radio)$/.test(el.type)) { if (el.checked) (d[el.name] = d[el.name] || []).push(el.value); }
      else d[el.name] = el.value;
    });
    put(NS + "draft:" + formID(f), d);
  }
  function restoreDraft(f) {
    var d = draftOn(f) && get(NS + "draft:" + formID(f));
    if (!d) return;
    [].forEach.call(f.elements, function (el) {
      if (!drafted(el) || !(el.name in d)) return;
      if (/^(checkbox|radio)$/.test(el.type)) el.checked = d[el.name].indexOf(el.value) >= 0;
      else if (!el.value) el.value = d[el.name];
    });
  }

  // status returns the form's live region: its own [data-form-outbox-status] element, or
  // one added at the end of the form.
  function status(f) {
    var s = f.querySelector("[data-form-outbox-status]");
    if (!s) {
      s = document.createElement("p");
      s.setAttribute("data-form-outbox-status", "");
      s.className = "form-outbox-status";
      f.appendChild(s);
    }
    s.setAttribute("role", "status");
    s.setAttribute("aria-live", "polite");
    return s;
  }
  function show(f, state, text) {
    if (!f) return;
    f.setAttribute("data-form-outbox-state", state);
    f.setAttribute("aria-busy", state === "sending" || state === "retrying" ? "true" : "false");
    status(f).textContent = f.getAttribute("data-form-outbox-" + state) || text;
  }

  function clearErrors(f) {
    [].forEach.call(f.querySelectorAll(".form-outbox-error"), function (e) { e.remove(); });
    [].forEach.call(f.querySelectorAll("[aria-invalid]"), function (el) {
      el.removeAttribute("aria-invalid");
      var ids = (el.getAttribute("aria-describedby") || "").split(" ").filter(function (i) {
        return i.indexOf("form-outbox-error-") !== 0;
      }).join(" ");
      ids ? el.setAttribute("aria-describedby", ids) : el.removeAttribute("aria-describedby");
    });
  }
  function fieldErrors(f, errs) {
    var first;
    errs.forEach(function (e, i) {
      var el = f.elements[e.field];
      if (el && !el.nodeName && el.length) el = el[0];
      if (!el) return;
      var m = document.createElement("span");
      m.className = "form-outbox-error";
      m.id = "form-outbox-error-" + i;
      m.textContent = e.message;
      el.setAttribute("aria-invalid", "true");
      el.setAttribute("aria-describedby", ((el.getAttribute("aria-describedby") || "") + " " + m.id).trim());
      el.insertAdjacentElement("afterend", m);
      first = first || el;
    });
    if (first) first.focus();
  }

  // fetchToken asks the form's endpoint for a time-trap token (intake/timetrap.go) and
  // keeps it for the form's next post; data-form-outbox-token says when one is ready. A
  // form whose time trap is off, or an old server, answers without one: the post then
  // goes out without it, which is never held against it on its own.
  function fetchToken(f) {
    var id = formID(f), u = new URL(f.action, location.href);
    delete tokens[id];
    f.removeAttribute("data-form-outbox-token");
    u.searchParams.set("form_outbox", "token");
    fetch(u.href, { credentials: "same-origin", headers: { "Accept": "application/json" } }).then(function (r) {
      return r.ok ? r.json() : null;
    }).then(function (a) {
      if (a && a.token && a.field) { tokens[id] = [a.field, a.token]; f.setAttribute("data-form-outbox-token", "ready"); }
      if (a && a.altcha) prove(f, id, u);
    }, function () {});
  }

  // prove solves the form's proof of work (intake/altcha.go, ALTCHA's challenge format)
  // with Web Crypto: the number n in [0, maxnumber] with hex(SHA-256(salt + n)) equal to
  // the challenge. The post waits for it (proofs[id] is a promise); a failure leaves the
  // post without one, which the server judges as it is configured to.
  function prove(f, id, u) {
    u.searchParams.set("form_outbox", "altcha");
    f.removeAttribute("data-form-outbox-altcha");
    proofs[id] = fetch(u.href, { credentials: "same-origin", headers: { "Accept": "application/json" } }).then(function (r) {
      return r.json();
    }).then(function (c) {
      var enc = new TextEncoder(), step = 500;
      function hex(b) { return [].map.call(new Uint8Array(b), function (x) { return (x < 16 ? "0" : "") + x.toString(16); }).join(""); }
      // Hashes go out in batches, so the page stays responsive and the chain stays short.
      function batch(from) {
        if (from > c.maxnumber) return null;
        var hs = [];
        for (var i = from; i <= Math.min(from + step - 1, c.maxnumber); i++) hs.push(crypto.subtle.digest("SHA-256", enc.encode(c.salt + i)));
        return Promise.all(hs).then(function (out) {
          for (var j = 0; j < out.length; j++) {
            if (hex(out[j]) !== c.challenge) continue;
            f.setAttribute("data-form-outbox-altcha", "solved");
            return btoa(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number: from + j, salt: c.salt, signature: c.signature }));
          }
          return batch(from + step);
        });
      }
      return batch(0);
    }).catch(function () { return null; });
  }

  function retryLater(key, p, ms) {
    p.tries = (p.tries || 0) + 1;
    setPending(key, p);
    clearTimeout(timers[key]);
    timers[key] = setTimeout(function () { send(key); }, ms);
  }
  function backoff(p) { return Math.min(MAX_WAIT, 1000 * Math.pow(2, p.tries || 0)); }

  // send posts the pending submission under key, with that key as its Idempotency-Key,
  // until an answer settles it. Every retry carries the same key, so the server stores
  // it once however many of the posts reach it.
  function send(key) {
    var p = pending()[key];
    if (!p || timers[key] === true) return;
    clearTimeout(timers[key]);
    timers[key] = true;
    var f = byID(p.form);
    show(f, p.tries ? "retrying" : "sending", p.tries ? "Not sent yet; trying again…" : "Sending…");
    var ctl = new AbortController(), t = setTimeout(function () { ctl.abort(); }, TIMEOUT);
    fetch(p.url, {
      method: "POST", body: new URLSearchParams(p.fields), signal: ctl.signal, credentials: "same-origin",
      headers: { "Accept": "application/json", "Idempotency-Key": key }
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (a) { settle(key, p, f, r, a); });
    }, function () {
      timers[key] = 0;
      show(f, "retrying", "No connection; your message is kept and will be sent when the connection is back.");
      retryLater(key, p, backoff(p));
    }).finally(function () { clearTimeout(t); if (timers[key] === true) timers[key] = 0; });
  }

  function settle(key, p, f, r, a) {
    timers[key] = 0;
    var s = r.status;
    if (s === 429) {
      var secs = parseInt(r.headers.get("Retry-After"), 10) || 5;
      show(f, "waiting", "Too many messages right now; sending again in " + secs + " seconds.");
      return retryLater(key, p, secs * 1000);
    }
    if (s === 502 || s === 503 || s === 504 || s >= 200 && s < 300 && a.status === "queued") {
      show(f, "retrying", s < 300 ? "Received; confirming…" : "The server is busy; your message is kept and will be sent shortly.");
      return retryLater(key, p, backoff(p));
    }
    // Every other answer is definitive: this key is done, the next post gets a new one,
    // and a new token (a token is single use).
    setPending(key, null);
    if (f) fetchToken(f);
    if (s >= 200 && s < 300 && a.ok) {
      put(NS + "draft:" + p.form, null);
      if (!f) return;
      clearErrors(f);
      f.reset();
      if (a.next) return location.assign(a.next);
      // A post kept for review (spam, quarantine) is received, not sent: say no more.
      return show(f, "sent", a.status === "accepted" ? "Thank you, your message has been sent." : "Thank you, your message has been received.");
    }
    if (!f) return;
    clearErrors(f);
    if (s === 422 && a.errors) {
      fieldErrors(f, a.errors);
      return show(f, "error", "Please correct the marked fields.");
    }
    show(f, "error", a.error || "The message could not be sent (error " + s + ").");
  }

  function submit(ev) {
    var f = ev.target;
    if (!f.matches || !f.matches("form[data-form-outbox]")) return;
    // A form with a chosen file is posted by the browser itself, as multipart: a file
    // cannot wait in localStorage for a retry, and the client must never drop it.
    if ([].some.call(f.querySelectorAll("input[type=file]"), function (i) { return i.files && i.files.length; })) return;
    ev.preventDefault();
    saveDraft(f);
    var id = formID(f), all = pending(), key;
    // A second Send while the first is still pending reuses its key: whichever post
    // reaches the server first is the one stored.
    for (var k in all) if (all[k].form === id) key = k;
    var fields = [];
    new FormData(f, ev.submitter).forEach(function (v, n) { if (typeof v === "string") fields.push([n, v]); });
    // The token travels with the kept post, so every retry of it sends the same one.
    if (tokens[id]) fields.push(tokens[id]);
    key = key || newKey();
    if (!proofs[id]) return keep(key, id, f, fields);
    show(f, "sending", "Sending…");
    proofs[id].then(function (p) {
      if (p) fields.push(["altcha", p]);
      keep(key, id, f, fields);
    });
  }
  function keep(key, id, f, fields) {
    setPending(key, { form: id, url: f.action, fields: fields, tries: 0 });
    send(key);
  }

  function start() {
    [].forEach.call(document.querySelectorAll("form[data-form-outbox]"), function (f) {
      restoreDraft(f);
      fetchToken(f);
      f.addEventListener("input", function () { saveDraft(f); });
    });
    for (var k in pending()) send(k);
  }
  document.addEventListener("submit", submit);
  addEventListener("online", function () { for (var k in pending()) send(k); });
  document.readyState === "loading" ? document.addEventListener("DOMContentLoaded", start) : start();
})();
