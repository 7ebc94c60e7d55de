package e2e

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// netnsLink is a network namespace of one test joined to this one by a veth pair on a
// private /30 that exists only on those two interfaces: a packet to NSAddr goes over the
// veth and nowhere else, and Partition drops it inside the namespace (nftables), so the
// sender sees silence, not a refused connection, as in a real network partition.
type netnsLink struct {
	t        testing.TB
	NS       string
	HostAddr string // this namespace's end
	NSAddr   string // the namespace's end
	hostIf   string
}

// newNetnsLink creates the namespace and the veth pair; both go at cleanup, even when the
// test fails. It needs root, ip (iproute2) and nft (nftables): scripts/test installs them.
func newNetnsLink(t testing.TB) *netnsLink {
	t.Helper()
	needRoot(t, "network namespaces and nftables")
	id := fmt.Sprintf("%06x", rand.IntN(1<<24))
	// 10.213.0.0/16 is carved into /30s by a random number, so parallel tests (and other
	// engineers' runs on the same machine) almost never pick the same one; a collision
	// fails "ip addr add" loudly rather than sharing a link.
	n := rand.IntN(1 << 14)
	third, fourth := n>>6, (n&63)<<2
	l := &netnsLink{t: t, NS: "fo" + id, hostIf: "fo" + id + "h",
		HostAddr: fmt.Sprintf("10.213.%d.%d", third, fourth+1),
		NSAddr:   fmt.Sprintf("10.213.%d.%d", third, fourth+2)}
	nsIf := "fo" + id + "n"
	l.ip("netns", "add", l.NS)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", l.NS).Run() })
	l.ip("link", "add", l.hostIf, "type", "veth", "peer", "name", nsIf)
	// Deleting the host end deletes the pair; the namespace's end goes with the namespace.
	t.Cleanup(func() { exec.Command("ip", "link", "del", l.hostIf).Run() })
	l.ip("link", "set", nsIf, "netns", l.NS)
	l.ip("addr", "add", l.HostAddr+"/30", "dev", l.hostIf)
	l.ip("link", "set", l.hostIf, "up")
	l.ip("-n", l.NS, "addr", "add", l.NSAddr+"/30", "dev", nsIf)
	l.ip("-n", l.NS, "link", "set", nsIf, "up")
	l.ip("-n", l.NS, "link", "set", "lo", "up")
	l.nft("add", "table", "inet", "drill")
	l.nft("add", "chain", "inet", "drill", "input", "{ type filter hook input priority 0 ; policy accept ; }")
	l.nft("add", "chain", "inet", "drill", "output", "{ type filter hook output priority 0 ; policy accept ; }")
	return l
}

// Partition drops every packet to and from the veth inside the namespace.
func (l *netnsLink) Partition() {
	l.t.Helper()
	l.nft("add", "rule", "inet", "drill", "input", "iifname", "!=", "lo", "drop")
	l.nft("add", "rule", "inet", "drill", "output", "oifname", "!=", "lo", "drop")
}

// Heal removes the drop rules.
func (l *netnsLink) Heal() {
	l.t.Helper()
	l.nft("flush", "chain", "inet", "drill", "input")
	l.nft("flush", "chain", "inet", "drill", "output")
}

func (l *netnsLink) ip(args ...string) {
	l.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		l.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (l *netnsLink) nft(args ...string) {
	l.t.Helper()
	argv := append([]string{"netns", "exec", l.NS, "nft"}, args...)
	if out, err := exec.Command("ip", argv...).CombinedOutput(); err != nil {
		l.t.Fatalf("nft %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
