#include "demo/device_exerciser.h"

#include "demo/verbs_request.h"

#include <fcntl.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/unique_fd.h"
#include "proxy/abi/errno_names.h"

namespace gdrproxy::demo {
namespace {

using proxy::errno_name;

void report(std::ostream& out, const char* what, int rc) {
  out << "  " << what << " -> " << (rc == 0 ? "ok" : errno_name(-rc)) << "\n";
}

}  // namespace

int exercise_uverbs(const std::string& path, std::ostream& out) {
  const UniqueFd device(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!device) {
    out << "  open " << path << " -> " << errno_name(errno) << "\n";
    return 1;
  }
  const int fd = device.get();
  out << "  open " << path << " -> fd " << fd << "\n";
  ib_uverbs_query_device qd{};
  ib_uverbs_query_device_resp qdr{};
  report(out, "INVOKE_WRITE(QUERY_DEVICE)",
         invoke_write(fd, IB_USER_VERBS_CMD_QUERY_DEVICE, qd, &qdr));
  uint32_t vectors = 0;
  uint64_t support = 0;
  report(out, "DEVICE.GET_CONTEXT",
         VerbsRequest(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT)
             .ptr(UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS, &vectors, sizeof vectors)
             .ptr(UVERBS_ATTR_GET_CONTEXT_CORE_SUPPORT, &support, sizeof support)
             .issue(fd));
  ib_uverbs_alloc_pd pd{};
  ib_uverbs_alloc_pd_resp pdr{};
  report(out, "INVOKE_WRITE(ALLOC_PD)", invoke_write(fd, IB_USER_VERBS_CMD_ALLOC_PD, pd, &pdr));
  static char region[8192];
  ib_uverbs_reg_mr mr{};
  mr.start = reinterpret_cast<uintptr_t>(region);
  mr.length = sizeof region;
  mr.hca_va = mr.start;
  mr.pd_handle = pdr.pd_handle;
  mr.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_READ;
  ib_uverbs_reg_mr_resp mrr{};
  report(out, "INVOKE_WRITE(REG_MR)", invoke_write(fd, IB_USER_VERBS_CMD_REG_MR, mr, &mrr));
  report(out, "MR.REG_DMABUF_MR(fd=-1)",
         VerbsRequest(UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR)
             .handle(UVERBS_ATTR_REG_DMABUF_MR_HANDLE, 0)
             .handle(UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, pdr.pd_handle)
             .inline_u64(UVERBS_ATTR_REG_DMABUF_MR_OFFSET, 0)
             .inline_u64(UVERBS_ATTR_REG_DMABUF_MR_LENGTH, 1 << 21)
             .inline_u64(UVERBS_ATTR_REG_DMABUF_MR_IOVA, 0x7f0000000000)
             .inline_u64(UVERBS_ATTR_REG_DMABUF_MR_FD, static_cast<uint64_t>(-1), 4)
             .inline_u64(UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, IB_UVERBS_ACCESS_LOCAL_WRITE, 4)
             .issue(fd));
  ib_uverbs_create_comp_channel cc{};
  ib_uverbs_create_comp_channel_resp ccr{};
  ccr.fd = static_cast<uint32_t>(-1);
  report(out, "INVOKE_WRITE(CREATE_COMP_CHANNEL)",
         invoke_write(fd, IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, cc, &ccr));
  uint32_t cqe_out = 0;
  report(out, "CQ.CREATE_CQ",
         VerbsRequest(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE)
             .handle(UVERBS_ATTR_CREATE_CQ_HANDLE, 0)
             .inline_u64(UVERBS_ATTR_CREATE_CQ_CQE, 16, 4)
             .inline_u64(UVERBS_ATTR_CREATE_CQ_USER_HANDLE, 0x1234)
             .inline_u64(UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, ccr.fd, 0)
             .inline_u64(UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, 0, 4)
             .ptr(UVERBS_ATTR_CREATE_CQ_RESP_CQE, &cqe_out, sizeof cqe_out)
             .issue(fd));
  ib_uverbs_create_qp qp{};
  qp.pd_handle = pdr.pd_handle;
  qp.max_send_wr = qp.max_recv_wr = 16;
  qp.max_send_sge = qp.max_recv_sge = 1;
  qp.qp_type = 2;  // IB_QPT_RC
  ib_uverbs_create_qp_resp qpr{};
  report(out, "INVOKE_WRITE(CREATE_QP)", invoke_write(fd, IB_USER_VERBS_CMD_CREATE_QP, qp, &qpr));
  ib_uverbs_modify_qp mq{};
  mq.qp_handle = qpr.qp_handle;
  mq.qp_state = 3;  // IB_QPS_RTS
  mq.attr_mask =
      1 | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 16);  // STATE|TIMEOUT|RETRY|RNR|SQ_PSN
  report(out, "INVOKE_WRITE(MODIFY_QP -> RTS)",
         invoke_write(fd, IB_USER_VERBS_CMD_MODIFY_QP, mq, static_cast<char*>(nullptr)));
  ib_uverbs_dereg_mr dm{};
  dm.mr_handle = mrr.mr_handle;
  report(out, "INVOKE_WRITE(DEREG_MR)",
         invoke_write(fd, IB_USER_VERBS_CMD_DEREG_MR, dm, static_cast<char*>(nullptr)));
  report(out, "malformed header (length off by 8)",
         VerbsRequest(UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY)
             .handle(UVERBS_ATTR_DESTROY_PD_HANDLE, pdr.pd_handle)
             .issue(fd, 8));
  // The completion channel the kernel created is this process's fd, and ours to close.
  if (ccr.fd != static_cast<uint32_t>(-1)) ::close(static_cast<int>(ccr.fd));
  return 0;
}

int exercise_nvidia(const std::string& ctl, const std::string& uvm, std::ostream& out) {
  UniqueFd ctl_fd(::open(ctl.c_str(), O_RDWR | O_CLOEXEC));
  if (!ctl_fd) {
    out << "  open " << ctl << " -> " << errno_name(errno) << "\n";
    return 1;
  }
  const int fd = ctl_fd.get();
  out << "  open " << ctl << " -> fd " << fd << "\n";
  // NVOS64 (RM_ALLOC) laid out as on x86-64: 4 handles, 2 pointers, size, flags, status.
  struct {
    uint32_t hRoot, hObjectParent, hObjectNew, hClass;
    uint64_t pAllocParms, pRightsRequested;
    uint32_t paramsSize, flags, status, pad;
  } alloc{};
  static_assert(sizeof alloc == 48);
  alloc.hClass = 0x41;  // NV01_ROOT_CLIENT
  auto rc = [](int r) { return r == 0 ? 0 : -errno; };
  report(out, "RM_ALLOC(NV01_ROOT_CLIENT)",
         rc(::ioctl(fd, _IOWR('F', 0x2b, decltype(alloc)), &alloc)));
  // NVOS54 (RM_CONTROL): client, object, cmd, flags, params pointer, size, status.
  struct {
    uint32_t hClient, hObject, cmd, flags;
    uint64_t params;
    uint32_t paramsSize, status;
  } control{};
  static_assert(sizeof control == 32);
  uint8_t params[32] = {};
  control.hClient = control.hObject = alloc.hObjectNew;
  control.cmd = 0x101;  // NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION
  control.params = reinterpret_cast<uintptr_t>(params);
  control.paramsSize = sizeof params;
  report(out, "RM_CONTROL(0x101)", rc(::ioctl(fd, _IOWR('F', 0x2a, decltype(control)), &control)));
  // NVOS00 (RM_FREE): client, parent, object, status. Freeing the client frees what it holds.
  struct {
    uint32_t hRoot, hObjectParent, hObjectOld, status;
  } release{alloc.hObjectNew, alloc.hObjectNew, alloc.hObjectNew, 0};
  report(out, "RM_FREE", rc(::ioctl(fd, _IOWR('F', 0x29, decltype(release)), &release)));
  ctl_fd.reset();
  if (!uvm.empty()) {
    const UniqueFd u(::open(uvm.c_str(), O_RDWR | O_CLOEXEC));
    if (u) {
      struct {
        uint64_t flags;
        uint32_t rmStatus, pad;
      } init{};
      report(out, "UVM_INITIALIZE", rc(::ioctl(u.get(), 0x30000001, &init)));
    }
  }
  return 0;
}

}  // namespace gdrproxy::demo
