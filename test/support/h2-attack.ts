// Raw HTTP/2 on a socket, to misbehave as no client library would: an rpc whose announced message never comes.
import { connect, type Socket } from 'node:net';

const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** HPACK literal header fields without indexing, no Huffman (names and values under 127 bytes). */
function headerBlock(headers: [string, string][]): Buffer {
  return Buffer.concat(
    headers.flatMap(([name, value]) => [
      Buffer.from([0x00, name.length]),
      Buffer.from(name),
      Buffer.from([value.length]),
      Buffer.from(value),
    ]),
  );
}

/**
 * Opens an h2c connection to host:port, starts the rpc at `path` and announces a message of 1,000 bytes of which
 * it sends 3; resolves once the bytes are written, with the socket still open.
 */
export function startStalledRpc(host: string, port: number, path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host, () => {
      const headers = headerBlock([
        [':method', 'POST'],
        [':scheme', 'http'],
        [':path', path],
        [':authority', `${host}:${port}`],
        ['content-type', 'application/grpc'],
        ['te', 'trailers'],
      ]);
      const message = Buffer.from([0, 0, 0, 0x03, 0xe8, 1, 2, 3]);
      socket.write(
        Buffer.concat([
          preface,
          frame(0x4, 0, 0, Buffer.alloc(0)),
          frame(0x1, 0x4, 1, headers),
          frame(0x0, 0, 1, message),
        ]),
        (e) => (e ? reject(e) : resolve(socket)),
      );
    });
    socket.on('error', () => socket.destroy());
  });
}
