// A home router's restart, as its computers and the internet see it: its uplink down for a while and every
// connection it tracked forgotten (conntrack flushed through ctnetlink, as a reboot loses it), so its NAT maps afresh
// and nothing from outside reaches a computer on a mapping made before. Hole-punched paths die with it.
import type { HomeName, HomeNetwork } from '.'

// IPCTNL_MSG_CT_DELETE with no tuple over NETLINK_NETFILTER flushes the namespace's whole table, per family.
const FLUSH_CONNTRACK = `
import os, socket, struct
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)
s.bind((0, 0))
for family in (socket.AF_INET, socket.AF_INET6):
    s.send(struct.pack('=IHHII', 20, (1 << 8) | 2, 0x1 | 0x4, 1, 0) + struct.pack('BBH', family, 0, 0))
    data = s.recv(4096)
    kind, err = struct.unpack('=H', data[4:6])[0], struct.unpack('=i', data[16:20])[0]
    if kind == 2 and err != 0:
        raise SystemExit('conntrack flush failed: ' + os.strerror(-err))
`

/** Forgets every connection the home's router tracks (its NAT mappings among them). */
export async function forgetConnections(net: HomeNetwork, home: HomeName): Promise<void> {
  await net.exec(net.homes[home].router, ['/usr/bin/python3', '-c', FLUSH_CONNTRACK])
}

/** Restarts the home's router: down for `downMs`, back with no connection state (what it forgot is gone for good). */
export async function restartRouter(net: HomeNetwork, home: HomeName, downMs: number): Promise<void> {
  await net.cutLink(home)
  await forgetConnections(net, home)
  await new Promise((resolve) => setTimeout(resolve, downMs))
  // what its computers sent while it was down left no state either: a router boots with none
  await forgetConnections(net, home)
  await net.restoreLink(home)
}
