import { connect, createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { ConnectionGate, type ConnectionGateOptions } from '../../../gateway/http/connection-gate.js';

/**
 * The gate on real loopback sockets: a listener that admits through it, clients from several
 * loopback addresses (each its own sender).
 */
async function listener(opts: ConnectionGateOptions) {
  const gate = new ConnectionGate(opts);
  const accepted: Socket[] = [];
  const server: Server = createServer((socket) => {
    socket.on('error', () => undefined);
    if (gate.admit(socket)) accepted.push(socket);
    else socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const clients: Socket[] = [];
  /** A connection from `from`; resolves once the server has admitted or refused it. */
  const open = async (from: string): Promise<{ socket: Socket; admitted: boolean }> => {
    const before = accepted.length;
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    socket.on('error', () => undefined);
    clients.push(socket);
    await once(socket, 'connect');
    // Admitted: the server's side is in `accepted`; refused: the client sees the close.
    const admitted = await new Promise<boolean>((resolve) => {
      const poll = setInterval(() => {
        if (accepted.length > before) done(true);
        else if (socket.destroyed || socket.readableEnded) done(false);
      }, 2);
      socket.once('close', () => done(accepted.length > before));
      function done(v: boolean): void {
        clearInterval(poll);
        resolve(v);
      }
    });
    return { socket, admitted };
  };
  const close = async (): Promise<void> => {
    for (const c of clients) c.destroy();
    for (const a of accepted) a.destroy();
    server.close();
    await once(server, 'close');
  };
  return { gate, accepted, open, close };
}

describe('the connection gate', () => {
  test('one address holds at most a quarter of the port; another address still gets in', async () => {
    const refused: string[] = [];
    const l = await listener({ max: 16, refused: (why) => refused.push(why) });
    try {
      const first = [];
      for (let i = 0; i < 6; i++) first.push((await l.open('127.0.0.2')).admitted);
      expect(first).toEqual([true, true, true, true, false, false]);
      expect(refused).toEqual(['share', 'share']);
      expect((await l.open('127.0.0.3')).admitted).toBe(true);
    } finally {
      await l.close();
    }
  });

  test('a full port lets a newcomer take the place of an idle connection of whoever holds the most; busy ones are never cut', async () => {
    const refused: string[] = [];
    const l = await listener({ max: 8, tracksCalls: true, refused: (why) => refused.push(why) });
    try {
      // Four addresses fill the port (two each, a quarter): .2 with one busy and one idle, the
      // others all busy.
      for (const from of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'])
        for (let i = 0; i < 2; i++) expect((await l.open(from)).admitted).toBe(true);
      const [idle, ...busy] = l.accepted;
      for (const s of busy) l.gate.busy(s);
      const newcomer = await l.open('127.0.0.6');
      expect(newcomer.admitted).toBe(true);
      // The one closed for it is .2's idle one; the busy ones are all open.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(l.accepted.filter((s) => s.destroyed)).toEqual([idle]);
      // Nobody holds an idle connection beyond a newcomer's fair place now: refused.
      expect((await l.open('127.0.0.7')).admitted).toBe(false);
      expect(refused).toEqual(['full']);
    } finally {
      await l.close();
    }
  });

  test('a sender past its keep-alive share is told, as each call begins, that its connection closes after it', async () => {
    const l = await listener({ max: 64, keepAlivePerSender: 2, tracksCalls: true });
    try {
      for (let i = 0; i < 2; i++) await l.open('127.0.0.2');
      // Within its share: kept alive.
      expect(l.accepted.map((s) => l.gate.keepAlive(s))).toEqual([true, true]);
      const third = await l.open('127.0.0.2');
      expect(third.admitted).toBe(true);
      // Past it: each call beginning now closes its connection after its answer.
      expect(l.accepted.map((s) => l.gate.keepAlive(s))).toEqual([false, false, false]);
      // Another address is not held to this one's share.
      await l.open('127.0.0.3');
      expect(l.gate.keepAlive(l.accepted.at(-1)!)).toBe(true);
      // Once one of .2's has gone, the others are kept again.
      const [first, ...rest] = l.accepted;
      first!.destroy();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(rest.slice(0, 2).map((s) => l.gate.keepAlive(s))).toEqual([true, true]);
    } finally {
      await l.close();
    }
  });

  test('an IPv6 /64 is one sender; trusted proxies have no share', async () => {
    const gate = new ConnectionGate({ max: 8, unshared: (a) => a === '10.0.0.1' });
    const sock = (remoteAddress: string) => ({ remoteAddress, once: () => undefined }) as unknown as Socket;
    expect([1, 2, 3].map((i) => gate.admit(sock(`2001:db8::${i}`)))).toEqual([true, true, false]);
    expect(gate.admit(sock('2001:db8:0:1::1'))).toBe(true);
    // The proxy may fill what is left of the port.
    const proxied = Array.from({ length: 6 }, () => gate.admit(sock('10.0.0.1')));
    expect(proxied).toEqual([true, true, true, true, true, false]);
  });
});
