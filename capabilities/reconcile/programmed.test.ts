import type { ProxyState } from "../proxies";
import { programmedCondition } from "./programmed";

const H = "d".repeat(64);
const ok: ProxyState = { phase: "Programmed", desiredHash: H, hash: H, at: 1, verifiedAt: 1 };
const failed = (message: string): ProxyState => ({
  phase: "Failed",
  desiredHash: H,
  applied: undefined,
  error: { kind: "rejected", status: 400, message },
  message,
  attempts: 1,
  since: 1,
  nextAttemptAt: 2,
});
const address = [{ type: "IPAddress", value: "127.20.0.1" }];

describe("programmedCondition", () => {
  it("names the failing proxies, grouped by the proxy's message", () => {
    const c = programmedCondition(
      undefined,
      {
        proxies: [
          { ...failed("address in use"), name: "gw-a" },
          { ...failed("address in use"), name: "gw-b" },
          { ...failed("bad"), name: "gw-c" },
        ],
        desiredHash: H,
        serviceExists: true,
      },
      address,
    );
    expect(c).toMatchObject({
      status: "False",
      message: "0/3 proxies run the current configuration: gw-a, gw-b: address in use; gw-c: bad",
    });
    const some = programmedCondition(
      undefined,
      {
        proxies: [
          { ...ok, name: "gw-a" },
          { ...failed("bad"), name: "gw-b" },
        ],
        desiredHash: H,
        serviceExists: true,
      },
      address,
    );
    expect(some).toMatchObject({
      status: "True",
      message: "1/2 proxies run the current configuration; failing: gw-b: bad",
    });
  });

  it("says which Service is missing", () => {
    expect(
      programmedCondition(
        undefined,
        {
          proxies: [],
          desiredHash: H,
          serviceExists: false,
          noServiceMessage: "no Service labelled x",
        },
        [],
      ),
    ).toMatchObject({
      status: "False",
      reason: "AddressNotAssigned",
      message: "no Service labelled x",
    });
  });
});
