// GDRPROXY_HOT marks a function that every trapped ioctl runs on enforce's fast path (receive,
// look up, decode, judge, answer). The compiler places such functions side by side (.text.hot),
// so a call runs in a few pages of code instead of pages spread over the binary: the caller and
// gdrproxy take turns on one CPU, and after each switch every page touched again is a likely TLB
// and cache miss.
#pragma once

#define GDRPROXY_HOT [[gnu::hot]]
