// trailers.js: Node's own HTTP client and server, for chunked request
// trailers through the proxy (test_proxy_terminate.py, T20Trailers).
//   node trailers.js serve CERT KEY
//     an HTTPS server on 127.0.0.1; prints its port. Every request is
//     answered 200 with JSON: method, url, the Authorization it got, the
//     trailers Node parsed, and (seen) those of every earlier request but
//     one to /seen.
//   node trailers.js send PROXY_PORT HOST PORT CA PATH TRAILERS_JSON
//     CONNECT HOST:PORT through the proxy, TLS trusting CA alone, then a
//     chunked POST PATH with those trailers; prints status and body.
"use strict";
const fs = require("fs");
const http = require("http");
const https = require("https");
const tls = require("tls");

function serve(cert, key) {
	const seen = [];
	const srv = https.createServer({ cert: fs.readFileSync(cert),
	    key: fs.readFileSync(key) }, (req, res) => {
		req.resume();
		req.on("end", () => {
			const body = JSON.stringify({ method: req.method,
			    url: req.url, auth: req.headers.authorization || null,
			    trailers: req.trailers, seen: seen });
			if (req.url !== "/seen")
				seen.push({ url: req.url, trailers: req.trailers });
			res.writeHead(200, { "Content-Type":
			    "application/json" });
			res.end(body);
		});
	});
	srv.listen(0, "127.0.0.1", () => {
		console.log(srv.address().port);
	});
}

function send(pport, host, port, ca, path, trailers) {
	const hp = host + ":" + port;
	const c = http.request({ host: "127.0.0.1", port: +pport,
	    method: "CONNECT", path: hp, headers: { Host: hp } });
	c.on("connect", (res, sock) => {
		if (res.statusCode !== 200) {
			console.log(res.statusCode);
			process.exit(0);
		}
		const t = tls.connect({ socket: sock, servername: host,
		    ca: fs.readFileSync(ca) });
		const req = https.request({ host: host, port: +port,
		    method: "POST", path: path, createConnection: () => t,
		    headers: { "Transfer-Encoding": "chunked", "Trailer":
		    Object.keys(trailers).join(", ") } }, (r) => {
			let b = "";
			r.on("data", (d) => { b += d; });
			r.on("end", () => {
				console.log(r.statusCode + "\n" + b);
				process.exit(0);
			});
		});
		req.on("error", (e) => {
			console.log("error " + e.code);
			process.exit(0);
		});
		req.write("x");
		req.addTrailers(trailers);
		req.end();
	});
	c.on("error", (e) => {
		console.log("error " + e.code);
		process.exit(0);
	});
	c.end();
}

if (process.argv[2] === "serve")
	serve(process.argv[3], process.argv[4]);
else
	send(process.argv[3], process.argv[4], process.argv[5],
	    process.argv[6], process.argv[7], JSON.parse(process.argv[8]));
