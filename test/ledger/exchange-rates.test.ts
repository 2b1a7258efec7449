// Exchange rates that fetch themselves: --rates-url served by a fake ECB host on loopback, fetched by the job,
// then add_expense without exchange_rate uses the cross rate of the expense's date and says where it came from.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { fetchDocument } from "../../server/auth/safe-fetch.ts";
import { parseRatesUrl } from "../../server/jobs/exchange-rates.ts";
import { crossRate, parseEurofxref } from "../../server/domain/ledger/money/rates.ts";
import { serveTls, toLoopback, type TlsHost } from "../auth/tls-fixture.ts";
import { startTestServer, type TestServer } from "../harness.ts";
import { failure, groupWith } from "./ledger-fixtures.ts";

const HOST = "rates.example.test";
const file = (time: string, rates: Record<string, string>) => `<?xml version="1.0" encoding="UTF-8"?>
<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">
  <gesmes:subject>Reference rates</gesmes:subject>
  <gesmes:Sender><gesmes:name>European Central Bank</gesmes:name></gesmes:Sender>
  <Cube>
    <Cube time='${time}'>
${Object.entries(rates)
  .map(([c, r]) => `      <Cube currency='${c}' rate='${r}'/>`)
  .join("\n")}
    </Cube>
  </Cube>
</gesmes:Envelope>`;

let host: TlsHost;
let s: TestServer;
let served = file("2026-11-20", { USD: "1.0523", JPY: "162.41", GBP: "0.8312" });
const url = () => `https://${HOST}:${host.port}/stats/eurofxref/eurofxref-daily.xml`;

beforeAll(async () => {
  host = serveTls(HOST, () => new Response(served, { headers: { "content-type": "text/xml" } }));
  s = await startTestServer({ ratesUrl: url(), fetchRates: (u) => fetchDocument(u, { lookup: toLoopback, ca: host.cert }) });
});
afterAll(async () => {
  await s.stop();
  host.stop();
});

test("cross rates are exact to 12 decimals, rounded half away from zero; the file's days are read", () => {
  expect(crossRate("1.0523", "1")).toBe("0.950299344293");
  expect(crossRate("1", "162.41")).toBe("162.41");
  expect(crossRate("1.0523", "162.41")).toBe("154.3381165067");
  expect(crossRate("3", "2")).toBe("0.666666666667");
  const [day] = parseEurofxref(served);
  expect(day!.date).toBe("2026-11-20");
  expect(Object.fromEntries(day!.perEur)).toEqual({ USD: "1.0523", JPY: "162.41", GBP: "0.8312" });
  expect(() => parseEurofxref("<html>not rates</html>")).toThrow("no <Cube");
  // the flag takes https to a public host only, as the guard fetches it
  expect(() => parseRatesUrl("http://www.ecb.europa.eu/x.xml")).toThrow("must use https");
  expect(() => parseRatesUrl("https://127.0.0.1/x.xml")).toThrow("non-public");
});

test("the job fetches the file; a rate for the date makes exchange_rate optional, recorded with its source", async () => {
  const g = await groupWith(s, ["fx-a", "fx-b"], "EUR");
  const [a] = g.members;
  const args = { group_id: g.group_id, description: "Museum", amount: "21.05", currency: "USD", date: "2026-11-21" };
  // nothing fetched yet: the rate is still required
  expect((await failure(s, "add_expense", args, a!.key)).path).toBe("exchange_rate");

  const outcomes = await s.server.jobs.runDue();
  expect(outcomes.find((o) => o.job === "exchange_rates")).toEqual({ job: "exchange_rates", count: 3 });
  expect(host.seen).toContain("/stats/eurofxref/eurofxref-daily.xml");

  const { expense } = await s.ok("add_expense", args, a!.key);
  // Saturday's expense takes Friday's rate: 21.05 USD at 0.950299344293 EUR per USD = 20.00 EUR
  expect(expense.original).toEqual({ currency: "USD", amount_minor: 2105, amount: "21.05", exchange_rate: "0.950299344293" });
  expect(expense.amount_minor).toBe(2000);
  expect(expense.exchange_rate_source).toBe(`${url()} of 2026-11-20`);
  const stored = (await s.ok("get_expense", { expense_id: expense.expense_id }, a!.key)).history[0].expense;
  expect(stored.exchange_rate_source).toBe(`${url()} of 2026-11-20`);

  // a rate given wins and has no source; a cross rate between two fetched currencies; too old a rate is not used
  const given = await s.ok("add_expense", { ...args, exchange_rate: "0.9" }, a!.key);
  expect(given.expense.original.exchange_rate).toBe("0.9");
  expect(given.expense.exchange_rate_source).toBeNull();
  const usdGroup = await groupWith(s, ["fx-c", "fx-d"], "USD");
  const yen = await s.ok(
    "add_expense",
    { group_id: usdGroup.group_id, description: "Ramen", amount: "1000", currency: "JPY", date: "2026-11-20" },
    usdGroup.members[0]!.key,
  );
  expect(yen.expense.original.exchange_rate).toBe(crossRate("162.41", "1.0523"));
  expect((await failure(s, "add_expense", { ...args, date: "2026-12-01" }, a!.key)).path).toBe("exchange_rate");
  expect((await failure(s, "add_expense", { ...args, date: "2026-11-19" }, a!.key)).path).toBe("exchange_rate");

  // update_expense: a new currency without a rate takes the fetched one too
  const eur = await s.ok("add_expense", { group_id: g.group_id, description: "Tram", amount: "2.00", date: "2026-11-20" }, a!.key);
  const moved = await s.ok("update_expense", { expense_id: eur.expense.expense_id, expected_version: 1, currency: "GBP", amount: "8.31" }, a!.key);
  expect(moved.expense.exchange_rate_source).toBe(`${url()} of 2026-11-20`);
  expect(moved.expense.original.exchange_rate).toBe(crossRate("0.8312", "1"));
});

test("a file that does not parse fails the run and stores nothing", async () => {
  served = "<html>maintenance</html>";
  s.clock.advance(7 * 60 * 60 * 1000);
  const outcomes = await s.server.jobs.runDue();
  expect(outcomes.find((o) => o.job === "exchange_rates")?.error).toBeInstanceOf(Error);
});
