// How the etcd client tells an etcd that lost its history (wiped, restored, replaced) from replies
// that merely arrive out of order.
import { describe, expect, test } from "bun:test";
import { EtcdEpoch } from "./etcd-epoch.ts";

const header = (revision: number, cluster_id = "c1") => ({ revision: String(revision), cluster_id });

function epochWithLog() {
  const epoch = new EtcdEpoch();
  const changes: string[] = [];
  epoch.onChange((why) => changes.push(why));
  return { epoch, changes };
}

describe("etcd epoch", () => {
  test("a reply below the revision seen before its request was sent means etcd went back", () => {
    const { epoch, changes } = epochWithLog();
    epoch.observe(epoch.mark(), header(40));
    epoch.observe(epoch.mark(), header(3));
    expect(changes).toEqual(["etcd revision went back from 40 to 3 (etcd wiped or restored from a backup)"]);
    // From then on the new history is the one followed.
    epoch.observe(epoch.mark(), header(4));
    expect(changes).toHaveLength(1);
  });

  test("a reply to an older request arriving after a newer one's is not a change", () => {
    const { epoch, changes } = epochWithLog();
    epoch.observe(epoch.mark(), header(10));
    const older = epoch.mark();
    epoch.observe(epoch.mark(), header(12));
    epoch.observe(older, header(11));
    expect(changes).toEqual([]);
  });

  test("another cluster id is a change, whatever the revision", () => {
    const { epoch, changes } = epochWithLog();
    epoch.observe(epoch.mark(), header(5, "c1"));
    epoch.observe(epoch.mark(), header(50, "c2"));
    expect(changes).toEqual(["etcd cluster id changed from c1 to c2 (a different etcd)"]);
  });

  test("replies to requests sent before a change tell nothing more: one change, one notice", () => {
    const { epoch, changes } = epochWithLog();
    epoch.observe(epoch.mark(), header(40));
    const inFlight = [epoch.mark(), epoch.mark()];
    epoch.observe(inFlight[0]!, header(2));
    epoch.observe(inFlight[1]!, header(1));
    expect(changes).toHaveLength(1);
    epoch.observe(epoch.mark(), header(2));
    expect(changes).toHaveLength(1);
  });

  test("a watch event's header only raises the revision: history replayed may lag etcd's current one", () => {
    const { epoch, changes } = epochWithLog();
    epoch.observe(epoch.mark(), header(40));
    epoch.observe(epoch.mark(), header(20), false);
    epoch.observe(epoch.mark(), header(60), false);
    expect(changes).toEqual([]);
    epoch.observe(epoch.mark(), header(50));
    expect(changes).toEqual(["etcd revision went back from 60 to 50 (etcd wiped or restored from a backup)"]);
  });

  test("replies without a header, or the first cluster id seen, are not changes", () => {
    const { epoch, changes } = epochWithLog();
    epoch.observe(epoch.mark(), undefined);
    epoch.observe(epoch.mark(), { revision: "7" });
    epoch.observe(epoch.mark(), header(8, "c9"));
    expect(changes).toEqual([]);
  });
});
