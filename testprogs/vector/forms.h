/* The instruction forms vecdiff.c runs: X(name, "instruction", setup).
 * Registers: ymm1 destination, ymm2 first source (VVVV), ymm3 r/m, ymm4
 * blend selector; (%rdi) the memory operand; eax/ecx/rax/rcx general
 * operands. setup: 0 none, 1 dword gather indices in ymm3, 2 qword ones,
 * 3 strings (ymm1, ymm3 and memory from a small alphabet with zeros,
 * lengths in rax and rdx around the element count). */

/* Three operands, 128 and 256 bits, register and memory r/m. */
#define T3(X, op) \
    X(op##_x, #op " %xmm3, %xmm2, %xmm1", 0) \
    X(op##_xm, #op " (%rdi), %xmm2, %xmm1", 0) \
    X(op##_y, #op " %ymm3, %ymm2, %ymm1", 0) \
    X(op##_ym, #op " (%rdi), %ymm2, %ymm1", 0)
/* Three operands, scalar (xmm only). */
#define S3(X, op) \
    X(op##_x, #op " %xmm3, %xmm2, %xmm1", 0) \
    X(op##_xm, #op " (%rdi), %xmm2, %xmm1", 0)
/* Two operands, 128 and 256 bits. */
#define T2(X, op) \
    X(op##_x, #op " %xmm3, %xmm1", 0) \
    X(op##_xm, #op " (%rdi), %xmm1", 0) \
    X(op##_y, #op " %ymm3, %ymm1", 0) \
    X(op##_ym, #op " (%rdi), %ymm1", 0)
/* Three operands with an immediate. */
#define T3I(X, op, imm) \
    X(op##_x_##imm, #op " $" #imm ", %xmm3, %xmm2, %xmm1", 0) \
    X(op##_xm_##imm, #op " $" #imm ", (%rdi), %xmm2, %xmm1", 0) \
    X(op##_y_##imm, #op " $" #imm ", %ymm3, %ymm2, %ymm1", 0) \
    X(op##_ym_##imm, #op " $" #imm ", (%rdi), %ymm2, %ymm1", 0)
#define S3I(X, op, imm) \
    X(op##_x_##imm, #op " $" #imm ", %xmm3, %xmm2, %xmm1", 0) \
    X(op##_xm_##imm, #op " $" #imm ", (%rdi), %xmm2, %xmm1", 0)
#define T2I(X, op, imm) \
    X(op##_x_##imm, #op " $" #imm ", %xmm3, %xmm1", 0) \
    X(op##_xm_##imm, #op " $" #imm ", (%rdi), %xmm1", 0) \
    X(op##_y_##imm, #op " $" #imm ", %ymm3, %ymm1", 0) \
    X(op##_ym_##imm, #op " $" #imm ", (%rdi), %ymm1", 0)
/* Shift by immediate (register only, destination VVVV). */
#define SHI(X, op, imm) \
    X(op##_x_##imm, #op " $" #imm ", %xmm3, %xmm1", 0) \
    X(op##_y_##imm, #op " $" #imm ", %ymm3, %ymm1", 0)
/* Shift by an XMM count. */
#define SHX(X, op) \
    X(op##_x, #op " %xmm3, %xmm2, %xmm1", 0) \
    X(op##_xm, #op " (%rdi), %xmm2, %xmm1", 0) \
    X(op##_y, #op " %xmm3, %ymm2, %ymm1", 0) \
    X(op##_ym, #op " (%rdi), %ymm2, %ymm1", 0)
/* The FMA3 orders of one operation. */
#define FMA(X, op, t) T3(X, op##132##t) T3(X, op##213##t) T3(X, op##231##t)
#define FMAS(X, op, t) S3(X, op##132##t) S3(X, op##213##t) S3(X, op##231##t)
/* Widening moves: half (or less) of the source. */
#define EXT(X, op) \
    X(op##_x, #op " %xmm3, %xmm1", 0) \
    X(op##_xm, #op " (%rdi), %xmm1", 0) \
    X(op##_y, #op " %xmm3, %ymm1", 0) \
    X(op##_ym, #op " (%rdi), %ymm1", 0)

/* SSE4.2 string comparisons: every imm8 mode (bits 0-6) with register
 * operands, a few with memory and with VEX.W1 (64-bit lengths). */
#define PCMP(X, op, imm) X(op##_x_##imm, #op " $" #imm ", %xmm3, %xmm1", 3)
#define PCMP16(X, op, hi) \
    PCMP(X, op, hi##0) PCMP(X, op, hi##1) PCMP(X, op, hi##2) PCMP(X, op, hi##3) \
    PCMP(X, op, hi##4) PCMP(X, op, hi##5) PCMP(X, op, hi##6) PCMP(X, op, hi##7) \
    PCMP(X, op, hi##8) PCMP(X, op, hi##9) PCMP(X, op, hi##a) PCMP(X, op, hi##b) \
    PCMP(X, op, hi##c) PCMP(X, op, hi##d) PCMP(X, op, hi##e) PCMP(X, op, hi##f)
#define PCMP_ALL(X, op) \
    PCMP16(X, op, 0x0) PCMP16(X, op, 0x1) PCMP16(X, op, 0x2) PCMP16(X, op, 0x3) \
    PCMP16(X, op, 0x4) PCMP16(X, op, 0x5) PCMP16(X, op, 0x6) PCMP16(X, op, 0x7)
#define PCMPM(X, op, imm) X(op##_xm_##imm, #op " $" #imm ", (%rdi), %xmm1", 3)
#define PCMP_MEM(X, op) \
    PCMPM(X, op, 0x0c) PCMPM(X, op, 0x1a) PCMPM(X, op, 0x44) PCMPM(X, op, 0x7b)
/* AES at 128 bits (the 256-bit forms need VAES). */
#define AESKEY(X, imm) \
    X(vaeskeygenassist_x_##imm, "vaeskeygenassist $" #imm ", %xmm3, %xmm1", 0) \
    X(vaeskeygenassist_xm_##imm, "vaeskeygenassist $" #imm ", (%rdi), %xmm1", 0)

#define FORMS(X) \
    T3(X, vpaddb) T3(X, vpaddw) T3(X, vpaddd) T3(X, vpaddq) \
    T3(X, vpsubb) T3(X, vpsubw) T3(X, vpsubd) T3(X, vpsubq) \
    T3(X, vpaddusb) T3(X, vpaddusw) T3(X, vpsubusb) T3(X, vpsubusw) \
    T3(X, vpaddsb) T3(X, vpaddsw) T3(X, vpsubsb) T3(X, vpsubsw) \
    T3(X, vpminub) T3(X, vpmaxub) T3(X, vpminsw) T3(X, vpmaxsw) \
    T3(X, vpminsb) T3(X, vpminsd) T3(X, vpminuw) T3(X, vpminud) \
    T3(X, vpmaxsb) T3(X, vpmaxsd) T3(X, vpmaxuw) T3(X, vpmaxud) \
    T3(X, vpand) T3(X, vpandn) T3(X, vpor) T3(X, vpxor) \
    T3(X, vpcmpeqb) T3(X, vpcmpeqw) T3(X, vpcmpeqd) T3(X, vpcmpeqq) \
    T3(X, vpcmpgtb) T3(X, vpcmpgtw) T3(X, vpcmpgtd) T3(X, vpcmpgtq) \
    T3(X, vpmullw) T3(X, vpmulhw) T3(X, vpmulhuw) T3(X, vpmulld) \
    T3(X, vpmuludq) T3(X, vpmuldq) T3(X, vpavgb) T3(X, vpavgw) \
    T3(X, vpsignb) T3(X, vpsignw) T3(X, vpsignd) T3(X, vpmulhrsw) \
    T3(X, vpsllvd) T3(X, vpsllvq) T3(X, vpsrlvd) T3(X, vpsrlvq) T3(X, vpsravd) \
    T3(X, vpshufb) T3(X, vphaddw) T3(X, vphaddd) T3(X, vphaddsw) \
    T3(X, vphsubw) T3(X, vphsubd) T3(X, vphsubsw) \
    T3(X, vpmaddwd) T3(X, vpmaddubsw) T3(X, vpsadbw) \
    T3(X, vpacksswb) T3(X, vpackssdw) T3(X, vpackuswb) T3(X, vpackusdw) \
    T3(X, vpunpcklbw) T3(X, vpunpcklwd) T3(X, vpunpckldq) T3(X, vpunpcklqdq) \
    T3(X, vpunpckhbw) T3(X, vpunpckhwd) T3(X, vpunpckhdq) T3(X, vpunpckhqdq) \
    T3(X, vaddps) T3(X, vaddpd) T3(X, vsubps) T3(X, vsubpd) \
    T3(X, vmulps) T3(X, vmulpd) T3(X, vdivps) T3(X, vdivpd) \
    T3(X, vminps) T3(X, vminpd) T3(X, vmaxps) T3(X, vmaxpd) \
    T3(X, vandps) T3(X, vandpd) T3(X, vandnps) T3(X, vandnpd) \
    T3(X, vorps) T3(X, vorpd) T3(X, vxorps) T3(X, vxorpd) \
    T3(X, vunpcklps) T3(X, vunpckhps) T3(X, vunpcklpd) T3(X, vunpckhpd) \
    T3(X, vhaddps) T3(X, vhaddpd) T3(X, vhsubps) T3(X, vhsubpd) \
    T3(X, vaddsubps) T3(X, vaddsubpd) T3(X, vpermilps) T3(X, vpermilpd) \
    FMA(X, vfmadd, ps) FMA(X, vfmadd, pd) FMA(X, vfmsub, ps) FMA(X, vfmsub, pd) \
    FMA(X, vfnmadd, ps) FMA(X, vfnmadd, pd) FMA(X, vfnmsub, ps) FMA(X, vfnmsub, pd) \
    FMA(X, vfmaddsub, ps) FMA(X, vfmaddsub, pd) FMA(X, vfmsubadd, ps) FMA(X, vfmsubadd, pd) \
    FMAS(X, vfmadd, ss) FMAS(X, vfmadd, sd) FMAS(X, vfmsub, ss) FMAS(X, vfmsub, sd) \
    FMAS(X, vfnmadd, ss) FMAS(X, vfnmadd, sd) FMAS(X, vfnmsub, ss) FMAS(X, vfnmsub, sd) \
    S3(X, vaddss) S3(X, vaddsd) S3(X, vsubss) S3(X, vsubsd) \
    S3(X, vmulss) S3(X, vmulsd) S3(X, vdivss) S3(X, vdivsd) \
    S3(X, vminss) S3(X, vminsd) S3(X, vmaxss) S3(X, vmaxsd) \
    S3(X, vsqrtss) S3(X, vsqrtsd) \
    T2(X, vmovdqu) T2(X, vmovups) T2(X, vmovupd) \
    X(vlddqu_xm, "vlddqu (%rdi), %xmm1", 0) X(vlddqu_ym, "vlddqu (%rdi), %ymm1", 0) \
    T2(X, vsqrtps) T2(X, vsqrtpd) T2(X, vcvtdq2ps) T2(X, vcvtps2dq) T2(X, vcvttps2dq) \
    T2(X, vpabsb) T2(X, vpabsw) T2(X, vpabsd) \
    T2(X, vmovshdup) T2(X, vmovsldup) T2(X, vmovddup) \
    T2(X, vptest) T2(X, vtestps) T2(X, vtestpd) \
    T3I(X, vpblendd, 0xa5) T3I(X, vblendps, 0x3c) T3I(X, vblendpd, 0x6) \
    T3I(X, vpblendw, 0x93) T3I(X, vpalignr, 3) T3I(X, vpalignr, 17) \
    T3I(X, vshufps, 0x1b) T3I(X, vshufpd, 0x5) \
    T3I(X, vcmpps, 0) T3I(X, vcmpps, 1) T3I(X, vcmpps, 2) T3I(X, vcmpps, 3) \
    T3I(X, vcmpps, 4) T3I(X, vcmpps, 5) T3I(X, vcmpps, 6) T3I(X, vcmpps, 7) \
    T3I(X, vcmpps, 8) T3I(X, vcmpps, 13) T3I(X, vcmpps, 14) T3I(X, vcmpps, 30) \
    T3I(X, vcmppd, 0) T3I(X, vcmppd, 1) T3I(X, vcmppd, 4) T3I(X, vcmppd, 9) \
    S3I(X, vcmpss, 2) S3I(X, vcmpsd, 6) \
    S3I(X, vroundss, 1) S3I(X, vroundsd, 2) \
    T2I(X, vpshufd, 0x1b) T2I(X, vpshufhw, 0x93) T2I(X, vpshuflw, 0xc6) \
    T2I(X, vpermilps, 0x39) T2I(X, vpermilpd, 0x5) \
    T2I(X, vroundps, 0) T2I(X, vroundps, 1) T2I(X, vroundps, 2) T2I(X, vroundps, 3) \
    T2I(X, vroundpd, 0) T2I(X, vroundpd, 9) \
    SHI(X, vpsllw, 3) SHI(X, vpsllw, 17) SHI(X, vpslld, 5) SHI(X, vpsllq, 33) \
    SHI(X, vpsrlw, 1) SHI(X, vpsrld, 31) SHI(X, vpsrlq, 63) SHI(X, vpsraw, 4) \
    SHI(X, vpsraw, 200) SHI(X, vpsrad, 7) SHI(X, vpslldq, 5) SHI(X, vpsrldq, 11) \
    SHX(X, vpsllw) SHX(X, vpslld) SHX(X, vpsllq) SHX(X, vpsrlw) SHX(X, vpsrld) \
    SHX(X, vpsrlq) SHX(X, vpsraw) SHX(X, vpsrad) \
    EXT(X, vpmovzxbw) EXT(X, vpmovzxbd) EXT(X, vpmovzxbq) EXT(X, vpmovzxwd) \
    EXT(X, vpmovzxwq) EXT(X, vpmovzxdq) EXT(X, vpmovsxbw) EXT(X, vpmovsxbd) \
    EXT(X, vpmovsxbq) EXT(X, vpmovsxwd) EXT(X, vpmovsxwq) EXT(X, vpmovsxdq) \
    EXT(X, vpbroadcastb) EXT(X, vpbroadcastw) EXT(X, vpbroadcastd) EXT(X, vpbroadcastq) \
    EXT(X, vbroadcastss) EXT(X, vcvtph2ps) \
    X(vbroadcastsd_y, "vbroadcastsd %xmm3, %ymm1", 0) \
    X(vbroadcastsd_ym, "vbroadcastsd (%rdi), %ymm1", 0) \
    X(vbroadcasti128_ym, "vbroadcasti128 (%rdi), %ymm1", 0) \
    X(vbroadcastf128_ym, "vbroadcastf128 (%rdi), %ymm1", 0) \
    X(vpermd_y, "vpermd %ymm3, %ymm2, %ymm1", 0) \
    X(vpermd_ym, "vpermd (%rdi), %ymm2, %ymm1", 0) \
    X(vpermps_y, "vpermps %ymm3, %ymm2, %ymm1", 0) \
    X(vpermq_y, "vpermq $0x4e, %ymm3, %ymm1", 0) \
    X(vpermq_ym, "vpermq $0x93, (%rdi), %ymm1", 0) \
    X(vpermpd_y, "vpermpd $0x1b, %ymm3, %ymm1", 0) \
    X(vperm2i128_y, "vperm2i128 $0x21, %ymm3, %ymm2, %ymm1", 0) \
    X(vperm2i128_ym, "vperm2i128 $0x83, (%rdi), %ymm2, %ymm1", 0) \
    X(vperm2f128_y, "vperm2f128 $0x12, %ymm3, %ymm2, %ymm1", 0) \
    X(vinserti128_y, "vinserti128 $1, %xmm3, %ymm2, %ymm1", 0) \
    X(vinserti128_ym, "vinserti128 $0, (%rdi), %ymm2, %ymm1", 0) \
    X(vinsertf128_y, "vinsertf128 $1, %xmm3, %ymm2, %ymm1", 0) \
    X(vextracti128_y, "vextracti128 $1, %ymm1, %xmm3", 0) \
    X(vextracti128_ym, "vextracti128 $1, %ymm1, (%rdi)", 0) \
    X(vextractf128_y, "vextractf128 $0, %ymm1, %xmm3", 0) \
    X(vpmovmskb_x, "vpmovmskb %xmm1, %eax", 0) \
    X(vpmovmskb_y, "vpmovmskb %ymm1, %eax", 0) \
    X(vmovmskps_y, "vmovmskps %ymm1, %ecx", 0) \
    X(vmovmskpd_x, "vmovmskpd %xmm1, %ecx", 0) \
    X(vmovd_to_x, "vmovd %eax, %xmm1", 0) \
    X(vmovq_to_x, "vmovq %rax, %xmm1", 0) \
    X(vmovd_from_x, "vmovd %xmm1, %ecx", 0) \
    X(vmovq_from_x, "vmovq %xmm1, %rcx", 0) \
    X(vmovd_load, "vmovd (%rdi), %xmm1", 0) \
    X(vmovq_load, "vmovq (%rdi), %xmm1", 0) \
    X(vmovd_store, "vmovd %xmm1, (%rdi)", 0) \
    X(vmovq_store, "vmovq %xmm1, (%rdi)", 0) \
    X(vmovq_x, "vmovq %xmm3, %xmm1", 0) \
    X(vpinsrb_x, "vpinsrb $5, %eax, %xmm2, %xmm1", 0) \
    X(vpinsrw_x, "vpinsrw $6, %eax, %xmm2, %xmm1", 0) \
    X(vpinsrd_x, "vpinsrd $3, %eax, %xmm2, %xmm1", 0) \
    X(vpinsrq_x, "vpinsrq $1, %rax, %xmm2, %xmm1", 0) \
    X(vpinsrw_xm, "vpinsrw $2, (%rdi), %xmm2, %xmm1", 0) \
    X(vpinsrq_xm, "vpinsrq $0, (%rdi), %xmm2, %xmm1", 0) \
    X(vpextrb_x, "vpextrb $7, %xmm1, %eax", 0) \
    X(vpextrw_x, "vpextrw $3, %xmm1, %eax", 0) \
    X(vpextrd_x, "vpextrd $2, %xmm1, %eax", 0) \
    X(vpextrq_x, "vpextrq $1, %xmm1, %rax", 0) \
    X(vpextrb_xm, "vpextrb $9, %xmm1, (%rdi)", 0) \
    X(vpextrd_xm, "vpextrd $1, %xmm1, (%rdi)", 0) \
    X(vextractps_x, "vextractps $2, %xmm1, %eax", 0) \
    X(vinsertps_x, "vinsertps $0x5a, %xmm3, %xmm2, %xmm1", 0) \
    X(vinsertps_xm, "vinsertps $0x21, (%rdi), %xmm2, %xmm1", 0) \
    X(vpblendvb_x, "vpblendvb %xmm4, %xmm3, %xmm2, %xmm1", 0) \
    X(vpblendvb_ym, "vpblendvb %ymm4, (%rdi), %ymm2, %ymm1", 0) \
    X(vblendvps_y, "vblendvps %ymm4, %ymm3, %ymm2, %ymm1", 0) \
    X(vblendvpd_x, "vblendvpd %xmm4, %xmm3, %xmm2, %xmm1", 0) \
    X(vmovdqu_store_y, "vmovdqu %ymm1, (%rdi)", 0) \
    X(vmovdqa_store_y, "vmovdqa %ymm1, (%rdi)", 0) \
    X(vmovdqa_load_y, "vmovdqa (%rdi), %ymm1", 0) \
    X(vmovaps_store_x, "vmovaps %xmm1, (%rdi)", 0) \
    X(vmovups_store_y, "vmovups %ymm1, (%rdi)", 0) \
    X(vmovntdq_y, "vmovntdq %ymm1, (%rdi)", 0) \
    X(vmovntdqa_y, "vmovntdqa (%rdi), %ymm1", 0) \
    X(vmovdqu_reg_store_y, "vmovdqu %ymm3, %ymm1", 0) \
    X(vmovss_load, "vmovss (%rdi), %xmm1", 0) \
    X(vmovss_reg, "vmovss %xmm3, %xmm2, %xmm1", 0) \
    X(vmovss_store, "vmovss %xmm1, (%rdi)", 0) \
    X(vmovsd_load, "vmovsd (%rdi), %xmm1", 0) \
    X(vmovsd_reg, "vmovsd %xmm3, %xmm2, %xmm1", 0) \
    X(vmovsd_store, "vmovsd %xmm1, (%rdi)", 0) \
    X(vmovhlps_x, "vmovhlps %xmm3, %xmm2, %xmm1", 0) \
    X(vmovlhps_x, "vmovlhps %xmm3, %xmm2, %xmm1", 0) \
    X(vmovlps_load, "vmovlps (%rdi), %xmm2, %xmm1", 0) \
    X(vmovhps_load, "vmovhps (%rdi), %xmm2, %xmm1", 0) \
    X(vmovlpd_load, "vmovlpd (%rdi), %xmm2, %xmm1", 0) \
    X(vmovhpd_load, "vmovhpd (%rdi), %xmm2, %xmm1", 0) \
    X(vmovlps_store, "vmovlps %xmm1, (%rdi)", 0) \
    X(vmovhps_store, "vmovhps %xmm1, (%rdi)", 0) \
    X(vcvtps2pd_y, "vcvtps2pd %xmm3, %ymm1", 0) \
    X(vcvtps2pd_xm, "vcvtps2pd (%rdi), %xmm1", 0) \
    X(vcvtpd2ps_y, "vcvtpd2psy %ymm3, %xmm1", 0) \
    X(vcvtpd2ps_x, "vcvtpd2psx %xmm3, %xmm1", 0) \
    X(vcvtdq2pd_y, "vcvtdq2pd %xmm3, %ymm1", 0) \
    X(vcvttpd2dq_y, "vcvttpd2dqy %ymm3, %xmm1", 0) \
    X(vcvtpd2dq_x, "vcvtpd2dqx %xmm3, %xmm1", 0) \
    X(vcvtss2sd_x, "vcvtss2sd %xmm3, %xmm2, %xmm1", 0) \
    X(vcvtsd2ss_xm, "vcvtsd2ss (%rdi), %xmm2, %xmm1", 0) \
    X(vcvtsi2ss_x, "vcvtsi2ss %eax, %xmm2, %xmm1", 0) \
    X(vcvtsi2sdq_x, "vcvtsi2sdq %rax, %xmm2, %xmm1", 0) \
    X(vcvtsi2sdl_xm, "vcvtsi2sdl (%rdi), %xmm2, %xmm1", 0) \
    X(vcvttss2si_x, "vcvttss2si %xmm3, %eax", 0) \
    X(vcvtss2si_x, "vcvtss2si %xmm3, %rax", 0) \
    X(vcvttsd2si_x, "vcvttsd2si %xmm3, %rax", 0) \
    X(vcvtsd2si_xm, "vcvtsd2si (%rdi), %eax", 0) \
    X(vucomiss_x, "vucomiss %xmm3, %xmm1", 0) \
    X(vcomiss_xm, "vcomiss (%rdi), %xmm1", 0) \
    X(vucomisd_x, "vucomisd %xmm3, %xmm1", 0) \
    X(vcomisd_x, "vcomisd %xmm3, %xmm1", 0) \
    X(vzeroupper, "vzeroupper", 0) \
    X(vzeroall, "vzeroall", 0) \
    X(vcvtps2ph_y_0, "vcvtps2ph $0, %ymm1, %xmm3", 0) \
    X(vcvtps2ph_x_1, "vcvtps2ph $1, %xmm1, %xmm3", 0) \
    X(vcvtps2ph_ym_2, "vcvtps2ph $2, %ymm1, (%rdi)", 0) \
    X(vcvtps2ph_x_3, "vcvtps2ph $3, %xmm1, %xmm3", 0) \
    X(vmaskmovps_ym, "vmaskmovps (%rdi), %ymm2, %ymm1", 0) \
    X(vmaskmovpd_store_x, "vmaskmovpd %xmm1, %xmm2, (%rdi)", 0) \
    X(vpmaskmovd_ym, "vpmaskmovd (%rdi), %ymm2, %ymm1", 0) \
    X(vpmaskmovq_store_y, "vpmaskmovq %ymm1, %ymm2, (%rdi)", 0) \
    X(vpgatherdd_y, "vpgatherdd %ymm2, 8(%rdi,%ymm3,4), %ymm1", 1) \
    X(vpgatherdd_x, "vpgatherdd %xmm2, (%rdi,%xmm3,2), %xmm1", 1) \
    X(vpgatherdq_y, "vpgatherdq %ymm2, (%rdi,%xmm3,8), %ymm1", 1) \
    X(vpgatherqd_y, "vpgatherqd %xmm2, 4(%rdi,%ymm3,4), %xmm1", 2) \
    X(vpgatherqq_x, "vpgatherqq %xmm2, (%rdi,%xmm3,1), %xmm1", 2) \
    X(vgatherdps_y, "vgatherdps %ymm2, (%rdi,%ymm3,4), %ymm1", 1) \
    X(vgatherqpd_y, "vgatherqpd %ymm2, (%rdi,%ymm3,8), %ymm1", 2) \
    T3I(X, vdpps, 0xff) T3I(X, vdpps, 0x31) T3I(X, vdpps, 0xa6) \
    S3I(X, vdppd, 0x33) S3I(X, vdppd, 0x21) \
    T3I(X, vmpsadbw, 0) T3I(X, vmpsadbw, 0x07) T3I(X, vmpsadbw, 0x2d) T3I(X, vmpsadbw, 0x3a) \
    S3I(X, vpclmulqdq, 0) S3I(X, vpclmulqdq, 0x01) S3I(X, vpclmulqdq, 0x10) \
    S3I(X, vpclmulqdq, 0x11) \
    X(vphminposuw_x, "vphminposuw %xmm3, %xmm1", 0) \
    X(vphminposuw_xm, "vphminposuw (%rdi), %xmm1", 0) \
    S3(X, vaesenc) S3(X, vaesenclast) S3(X, vaesdec) S3(X, vaesdeclast) \
    X(vaesimc_x, "vaesimc %xmm3, %xmm1", 0) \
    X(vaesimc_xm, "vaesimc (%rdi), %xmm1", 0) \
    AESKEY(X, 0x00) AESKEY(X, 0x01) AESKEY(X, 0x1b) AESKEY(X, 0x36) AESKEY(X, 0xff) \
    PCMP_ALL(X, vpcmpestri) PCMP_ALL(X, vpcmpestrm) \
    PCMP_ALL(X, vpcmpistri) PCMP_ALL(X, vpcmpistrm) \
    PCMP_MEM(X, vpcmpestri) PCMP_MEM(X, vpcmpestrm) \
    PCMP_MEM(X, vpcmpistri) PCMP_MEM(X, vpcmpistrm) \
    PCMP_MEM(X, vpcmpestriq) PCMP_MEM(X, vpcmpestrmq) \
    PCMP(X, vpcmpestriq, 0x08) PCMP(X, vpcmpestrmq, 0x71)
