//go:build go1.24

package main

import "net/http"

// serveH2c makes srv answer HTTP/2 with prior knowledge on its plaintext listener, besides
// HTTP/1.1: net/http's own h2c (Go 1.24+). Set only under --protocol h2c, because it makes the
// server peek at the first bytes of every connection for the preface, HTTP/1.1 ones too.
//
// go.mod says go 1.22, which keeps the 1.23-1.26 GODEBUG defaults the published HTTP/1.1
// figures were taken with; this file's build constraint raises the language version for this
// file alone, so `go vet`'s stdversion check accepts the 1.24 API.
func serveH2c(srv *http.Server) {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Protocols = &p
}
