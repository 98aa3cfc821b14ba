// The metrics responder's answers (proxy/agent/metrics_server.h) to request heads, and the
// addresses --metrics takes.
#include <gtest/gtest.h>

#include <string>

#include "base/error.h"
#include "proxy/agent/metrics_server.h"

namespace gdrproxy::proxy {
namespace {

const auto kPage = [] { return std::string("page\n"); };

TEST(MetricsHttp, GetMetricsAnswered) {
  const std::string a = metrics_http_answer("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", kPage);
  EXPECT_EQ(a.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << a;
  EXPECT_NE(a.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(a.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_EQ(a.substr(a.size() - 5), "page\n");
}

TEST(MetricsHttp, OtherRequestsRefused) {
  EXPECT_EQ(metrics_http_answer("GET / HTTP/1.1\r\n\r\n", kPage).rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(metrics_http_answer("GET /metricsx HTTP/1.0\n\n", kPage).rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(metrics_http_answer("POST /metrics HTTP/1.1\r\n\r\n", kPage).rfind("HTTP/1.1 405", 0),
            0u);
  EXPECT_EQ(metrics_http_answer("GET /metrics\r\n\r\n", kPage).rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(metrics_http_answer("\r\n\r\n", kPage).rfind("HTTP/1.1 400", 0), 0u);
}

TEST(MetricsAddress, UnixPathsAndTwoHostsOnly) {
  EXPECT_EQ(*parse_metrics_address("/run/gdrproxy/metrics.sock").path,
            "/run/gdrproxy/metrics.sock");
  const MetricsAddress l = parse_metrics_address("127.0.0.1:9464");
  EXPECT_FALSE(l.path);
  EXPECT_EQ(l.host, "127.0.0.1");
  EXPECT_EQ(l.port, 9464);
  EXPECT_EQ(parse_metrics_address("0.0.0.0:1").port, 1);
  for (const char* bad :
       {"10.0.0.1:9464", "localhost:9464", ":9464", "9464", "127.0.0.1:", "127.0.0.1:0",
        "127.0.0.1:65536", "127.0.0.1:94a", "metrics.sock", "[::1]:9464"})
    EXPECT_THROW(parse_metrics_address(bad), Error) << bad;
}

}  // namespace
}  // namespace gdrproxy::proxy
