#!/usr/bin/python3
"""A link with a one-way delay and a rate, in userspace (this kernel has no netem).

Copies Ethernet frames between two TAP devices it opens in two network namespaces, holding each
for the delay and pacing it to the rate, in order, both ways. Its queue is bounded like a
router's buffer: a frame that would wait longer than MAX_QUEUE_SECONDS for the line is dropped.
Usage: shaper.py NETNS_A IFNAME_A NETNS_B IFNAME_B DELAY_MS RATE_MBIT (0 = none).
Prints 'ready' once both TAPs exist; each stdin line 'DELAY_MS RATE_MBIT' changes the link and
is answered 'ok'. Exits when stdin closes or its parent dies; the TAPs vanish with it.
"""
import collections
import ctypes
import fcntl
import os
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
MAX_QUEUE_PACKETS = 10000
MAX_QUEUE_SECONDS = 0.25

libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
if os.getppid() == 1:
    sys.exit(0)


def open_tap(netns, name):
    """TUNSETIFF creates the device in the caller's namespace, so step into it and back."""
    home = os.open('/proc/self/ns/net', os.O_RDONLY)
    target = os.open(f'/var/run/netns/{netns}', os.O_RDONLY)
    try:
        if libc.setns(target, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f'setns into {netns} failed')
        fd = os.open('/dev/net/tun', os.O_RDWR | os.O_NONBLOCK)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack('16sH22x', name.encode(), IFF_TAP | IFF_NO_PI))
        return fd
    finally:
        libc.setns(home, CLONE_NEWNET)
        os.close(home)
        os.close(target)


class Direction:
    def __init__(self, src, dst):
        self.src, self.dst = src, dst
        self.queue = collections.deque()  # (due time, frame), due times never decrease
        self.line_free_at = 0.0

    def receive(self, now, delay, rate_bps):
        for _ in range(256):
            try:
                frame = os.read(self.src, 65536)
            except OSError:  # EAGAIN: drained; EIO: the link is down
                return
            if delay == 0 and rate_bps == 0 and not self.queue:
                send(self.dst, frame)
                continue
            start = max(now, self.line_free_at)
            if len(self.queue) >= MAX_QUEUE_PACKETS or start - now > MAX_QUEUE_SECONDS:
                continue
            if rate_bps:
                self.line_free_at = start + len(frame) * 8 / rate_bps
            self.queue.append((max(start, self.line_free_at) + delay, frame))

    def release(self, now):
        while self.queue and self.queue[0][0] <= now:
            send(self.dst, self.queue.popleft()[1])

    def next_due(self):
        return self.queue[0][0] if self.queue else None


def send(fd, frame):
    try:
        os.write(fd, frame)
    except OSError:  # the far side is down (a cut link): the frame is lost, as on a wire
        pass


def parse(line):
    delay_ms, rate_mbit = line.split()
    return float(delay_ms) / 1000, float(rate_mbit) * 1e6


def main():
    ns_a, if_a, ns_b, if_b, delay_ms, rate_mbit = sys.argv[1:7]
    delay, rate_bps = parse(f'{delay_ms} {rate_mbit}')
    a, b = open_tap(ns_a, if_a), open_tap(ns_b, if_b)
    directions = {a: Direction(a, b), b: Direction(b, a)}
    sys.stdout.write('ready\n')
    sys.stdout.flush()
    control = b''
    while True:
        dues = [d for d in (x.next_due() for x in directions.values()) if d is not None]
        timeout = max(0.0, min(dues) - time.monotonic()) if dues else None
        readable, _, _ = select.select([a, b, 0], [], [], timeout)
        now = time.monotonic()
        for fd in readable:
            if fd == 0:
                chunk = os.read(0, 4096)
                if not chunk:
                    return
                control += chunk
                while b'\n' in control:
                    line, control = control.split(b'\n', 1)
                    delay, rate_bps = parse(line.decode())
                    sys.stdout.write('ok\n')
                    sys.stdout.flush()
            else:
                directions[fd].receive(now, delay, rate_bps)
        for direction in directions.values():
            direction.release(time.monotonic())


main()
