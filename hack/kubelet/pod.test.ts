import { carriedRestarts } from "./pod";
import type { Pod } from "./types";

describe("carriedRestarts", () => {
  const pod = (status: Pod["status"]): Pod => ({
    metadata: { name: "p" },
    spec: { containers: [{ name: "c" }] },
    status,
  });
  const cs = (state: object, restartCount: number, lastState: object = {}) => ({
    containerStatuses: [
      {
        name: "c",
        image: "i",
        imageID: "i",
        ready: false,
        started: false,
        restartCount,
        state,
        lastState,
      },
    ],
  });

  it("starts at zero for a new pod or a container that never ran", () => {
    expect(carriedRestarts(pod(undefined), "c", false)).toBe(0);
    expect(
      carriedRestarts(
        pod(cs({ waiting: { reason: "ContainerCreating" } }, 0) as never),
        "c",
        false,
      ),
    ).toBe(0);
  });

  it("counts a restart for a container a previous kubelet ran", () => {
    expect(carriedRestarts(pod(cs({ running: { startedAt: "t" } }, 2) as never), "c", false)).toBe(
      3,
    );
    expect(
      carriedRestarts(
        pod(
          cs({ waiting: { reason: "CrashLoopBackOff" } }, 4, {
            terminated: { exitCode: 1 },
          }) as never,
        ),
        "c",
        false,
      ),
    ).toBe(5);
  });
});
