// SmallVector behaves as std::vector does for every operation it offers: random sequences of
// operations applied to both leave equal contents, across the inline capacity and beyond it,
// with ranges taken from the vector itself, copies and moves.
#include "model/small_vector.h"

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

namespace ckptspec {
namespace {

using Small = SmallVector<int64_t, 3>;

struct Op {
  int kind = 0;
  int64_t value = 0;
  size_t a = 0, b = 0;
};

std::string Describe(const std::vector<Op>& ops) {
  static const char* const kNames[] = {"push_back",
                                       "pop_back",
                                       "resize",
                                       "resize(n, v)",
                                       "assign(n, v)",
                                       "assign(own range)",
                                       "insert(v)",
                                       "insert(n, v)",
                                       "insert(own range)",
                                       "erase(one)",
                                       "erase(range)",
                                       "clear",
                                       "copy",
                                       "move",
                                       "reserve",
                                       "assign(list)",
                                       "self-copy",
                                       "resize(n, own element)",
                                       "assign(n, own element)"};
  std::ostringstream out;
  for (const Op& op : ops) {
    out << kNames[op.kind] << "(" << op.value << ", " << op.a << ", " << op.b << ") ";
  }
  return out.str();
}

// Applies `op` to both; positions are taken modulo the current size.
void Apply(const Op& op, std::vector<int64_t>* v, Small* s) {
  const size_t n = v->size();
  const size_t at = n == 0 ? 0 : op.a % (n + 1);
  const size_t to = n == 0 ? 0 : at + op.b % (n - std::min(at, n) + 1);
  switch (op.kind) {
    case 0:
      v->push_back(op.value);
      s->push_back(op.value);
      break;
    case 1:
      if (n > 0) {
        v->pop_back();
        s->pop_back();
      }
      break;
    case 2:
      v->resize(op.a % 9);
      s->resize(op.a % 9);
      break;
    case 3:
      v->resize(op.a % 9, op.value);
      s->resize(op.a % 9, op.value);
      break;
    case 4:
      v->assign(op.a % 9, op.value);
      s->assign(op.a % 9, op.value);
      break;
    case 5: {
      const std::vector<int64_t> copy(v->begin() + at, v->begin() + to);
      v->assign(copy.begin(), copy.end());
      s->assign(s->begin() + at, s->begin() + to);  // a range of itself
      break;
    }
    case 6:
      v->insert(v->begin() + at, op.value);
      s->insert(s->begin() + at, op.value);
      break;
    case 7:
      v->insert(v->begin() + at, op.b % 5, op.value);
      s->insert(s->begin() + at, op.b % 5, op.value);
      break;
    case 8: {
      const std::vector<int64_t> copy(v->begin() + at, v->begin() + to);
      v->insert(v->begin() + (n - at), copy.begin(), copy.end());
      s->insert(s->begin() + (n - at), s->begin() + at, s->begin() + to);
      break;
    }
    case 9:
      if (at < n) {
        v->erase(v->begin() + at);
        s->erase(s->begin() + at);
      }
      break;
    case 10:
      v->erase(v->begin() + at, v->begin() + to);
      s->erase(s->begin() + at, s->begin() + to);
      break;
    case 11:
      v->clear();
      s->clear();
      break;
    case 12: {
      Small copy(*s);
      *s = Small();
      *s = copy;
      break;
    }
    case 13: {
      Small moved(std::move(*s));
      RC_ASSERT(s->empty());
      *s = std::move(moved);
      break;
    }
    case 14:
      s->reserve(op.a % 12);
      break;
    case 15:
      *v = {op.value, op.value + 1};
      *s = {op.value, op.value + 1};
      break;
    case 16: {
      const Small& self = *s;
      *s = self;
      break;
    }
    case 17:  // a value taken from the vector itself, as the vector grows
      if (n > 0) {
        const int64_t value = (*v)[at % n];
        v->resize(n + op.b % 9, value);
        s->resize(n + op.b % 9, (*s)[at % n]);
      }
      break;
    case 18:
      if (n > 0) {
        const int64_t value = (*v)[at % n];
        v->assign(op.b % 12, value);
        s->assign(op.b % 12, (*s)[at % n]);
      }
      break;
  }
}

RC_GTEST_PROP(SmallVector, ActsAsStdVector, ()) {
  const auto ops = *rc::gen::container<std::vector<Op>>(
      rc::gen::build<Op>(rc::gen::set(&Op::kind, rc::gen::inRange(0, 19)),
                         rc::gen::set(&Op::value, rc::gen::arbitrary<int64_t>()),
                         rc::gen::set(&Op::a, rc::gen::inRange<size_t>(0, 20)),
                         rc::gen::set(&Op::b, rc::gen::inRange<size_t>(0, 20))));
  RC_TAG(ops.size() > 8 ? "long" : "short");
  RC_LOG() << "operations: " << Describe(ops) << "\n";
  std::vector<int64_t> v;
  Small s;
  for (const Op& op : ops) {
    Apply(op, &v, &s);
    RC_ASSERT(s.size() == v.size());
    RC_ASSERT(s.capacity() >= s.size());
    RC_ASSERT(s == v);
    RC_ASSERT(s.ToStdVector() == v);
  }
  const Small copy(v);
  RC_ASSERT(copy == s);
  RC_ASSERT(!(copy < s) && !(s < copy));
}

TEST(SmallVector, ComparesLexicographically) {
  EXPECT_LT(Small({1, 2}), Small({1, 3}));
  EXPECT_LT(Small({1, 2}), Small({1, 2, 0}));
  EXPECT_LT(Small({1, 2, 3, 4}), Small({2}));
  EXPECT_NE(Small({1, 2}), Small({1, 2, 0, 0}));
  EXPECT_EQ(Small({5, 6, 7, 8, 9}), Small({5, 6, 7, 8, 9}));
}

TEST(SmallVector, AtChecksItsBound) {
  Small s = {1, 2, 3, 4};
  EXPECT_EQ(s.at(3), 4);
  EXPECT_THROW(s.at(4), std::out_of_range);
}

}  // namespace
}  // namespace ckptspec
