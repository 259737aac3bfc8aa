// Grammar of the .tir language (contract: /work/shared/spec/LANGUAGE.md; choices it leaves
// open: docs/language.md). The grammar only recognises the shape of the text: every name
// (loop kinds, iter-var kinds, intrinsics, schedule primitives) is an ID checked by the
// builder (parser/builder.cpp), which gives clean, positioned error messages.
grammar Tir;

program : item* EOF ;

// A `;` may follow an item (`};`, a C habit), as it may follow a statement.
item : (funcDef | scheduleDef | intrinDef) ';'? ;

// ---------------------------------------------------------------- functions
// `-> B: f32[n]` (one output without parentheses) is accepted as well as `-> (B: f32[n])`.
funcDef : FUNC name=ID '(' inputs=paramList? ')' ('->' ('(' outputs=paramList? ')' | single=param))? body ;
paramList : param (',' param)* ','? ;
param : ID ':' DTYPE ('[' shape=exprList? ']')? (IN '[' lo=signedNum ',' hi=signedNum ','? ']')? ;
signedNum : '-'? (INT | FLOAT) ;

body : '{' stmt* '}' ;

// ---------------------------------------------------------------- statements
stmt
  : FOR ID (',' ID)* ','? IN kind=ID '(' args=argList? ')' annotation* body ';'?   # forStmt
  | ALLOC ID ':' DTYPE '[' shape=exprList? ']' (SCOPE STRING)? ';'?          # allocStmt
  | ifStmt ';'?                                                              # ifStatement
  | LET ID '=' expr ';'?                                                     # letStmt
  | ID '[' idx=exprList? ']' assignOp expr ';'?                              # storeStmt
  | ID '(' args=argList? ')' ';'?                                            # callStmt
  | BLOCK name=ID '(' (iterVar (',' iterVar)* ','?)? ')' '{' blockItem* '}' ';'?  # blockStmt
  | ';'                                                                      # emptyStmt
  ;

ifStmt : IF cond=expr thenBody=body (ELSE (elseIf=ifStmt | elseBody=body))? ;

// `max=` / `min=` are ID '=' so that `max` stays an ordinary name elsewhere.
// `/=`, `//=` and `%=` are extensions (Python's augmented assignments; the contract lists
// `+= -= *= max= min=`).
assignOp : '=' | '+=' | '-=' | '*=' | '/=' | '//=' | '%=' | ID '=' ;

annotation : ID '(' STRING ',' annValue ')' ;
annValue : '-'? INT | '-'? FLOAT | STRING ;

argList : expr (',' expr)* ','? ;

iterVar : name=ID ':' kind=ID '(' extent=expr ')' '=' binding=expr ;

blockItem
  : WHERE expr ';'?                           # whereItem
  | READS region (',' region)* ';'?           # readsItem
  | WRITES region (',' region)* ';'?          # writesItem
  | INIT body ';'?                            # initItem
  | stmt                                      # stmtItem
  ;

// A trailing comma is allowed in the brackets, as in every bracketed list (`reads A[vi, vj,]`).
region : ID ('[' (regionDim (',' regionDim)* ','?)? ']')? ;
// `lo:hi`, or a point; Python's `:`, `lo:` and `:hi` (TVMScript's `A[vi, :]`) stand for
// the bound 0 / the dimension's extent.
regionDim : lo=expr (colon=':' hi=expr?)? | colon=':' hi=expr? ;

// ---------------------------------------------------------------- expressions
// Alternatives from the tightest to the loosest binding (LANGUAGE.md, Precedence).
expr
  : primary                                              # primaryExpr
  | op=('-' | '!') expr                                  # unaryExpr
  | expr op=('*' | '/' | '//' | '%') expr                # binaryExpr
  | expr op=('+' | '-') expr                             # binaryExpr
  | expr op=('<' | '<=' | '>' | '>=' | '==' | '!=') expr # binaryExpr
  | expr op='&&' expr                                    # binaryExpr
  | expr op='||' expr                                    # binaryExpr
  ;

primary
  : INT                                                  # intLit
  | FLOAT                                                # floatLit
  | STRING                                               # stringLit
  | '(' LET ID '=' value=expr IN body_=expr ')'          # letExpr
  | '(' expr ')'                                         # parenExpr
  | DTYPE '(' args=argList? ')'                          # castExpr
  | DTYPE                                                # dtypeExpr
  | ID '(' args=argList? ')'                             # callExpr
  | ID '[' idx=exprList? ']'                             # loadExpr
  | ID '.' field=ID ('(' args=argList? ')')?             # ptrExpr
  | ID                                                   # varExpr
  ;

exprList : expr (',' expr)* ','? ;

// ---------------------------------------------------------------- schedules
scheduleDef : SCHEDULE name=ID '{' schedInstr* '}' ;
// Without a call (`i, j, k = loops`, `l = loops[0]`, `ls = loops[1:]`), `prim` names a list
// variable (checked by the builder: such an instruction binds at least one name).
// Results may be parenthesised, as a Python tuple: `(k,) = get_loops(b)`.
// `blocks = [b1, b2]`: names bound to a list of handles written out (lst; no primitive).
schedInstr : ('(' anyName (',' anyName)* ','? ')' '=' | anyName (',' anyName)* ','? '=')?
             (schedRecv? prim=anyName (call='(' (schedArg (',' schedArg)* ','?)? ')')? schedIndex*
              | lst='[' (schedValue (',' schedValue)* ','?)? ']') ';'? ;
// `sch.split(...)`: TVM's Python spelling; the receiver must be `sch` (checked by the builder).
schedRecv : recv=anyName '.' ;
// `get_loops(b)[-1]`: one handle of the list an instruction returns (TVM's Python indexing);
// `loops[1:]`, `loops[::-1]`: a slice of it (Python's bounds and steps).
schedIndex : '[' (idx=schedInt | lo=schedInt? slice=':' hi=schedInt? (':' step=schedInt?)?) ']' ;
schedInt : '-'? INT ;
schedArg : key=anyName '=' schedValue | schedValue ;
schedValue
  : anyName schedIndex+                                 # sItem
  | anyName                                             # sIdent
  // `*loops` (TVM's `sch.reorder(*loops)`): the items of a list as separate arguments.
  | '*' schedValue                                      # sStar
  | STRING                                              # sString
  | '-'? INT                                            # sInt
  | '-'? FLOAT                                          # sFloat
  | '[' (schedValue (',' schedValue)* ','?)? ']'        # sList
  // `("read", 0)`: a Python tuple (transform_layout's buffer); `(x)` alone is just x.
  | '(' schedValue (tcomma=',' (schedValue (',' schedValue)* ','?)?)? ')'  # sTuple
  // `lambda i, j: (j // 4, i, j % 4)`: an index map (transform_layout). `lambda` is an ID
  // (not reserved; checked by the builder); the body is a tuple, a list or one expression.
  | lam=ID params+=ID (',' params+=ID)* ':' lambdaBody  # sLambda
  // A nested instruction (`compute_inline(get_block("B"))`): the builder hoists it into
  // its own instruction bound to a fresh name.
  | schedRecv? prim=anyName '(' (schedArg (',' schedArg)* ','?)? ')' schedIndex*  # sCall
  ;
lambdaBody : '(' exprList? ')' | '[' exprList? ']' | expr ;
// Schedule handles may reuse reserved words (`init = decompose_reduction(b, k)`).
anyName : ID | DTYPE | FUNC | SCHEDULE | INTRIN | DESC | IMPL | FOR | IN | BLOCK | INIT | WHERE
        | READS | WRITES | ALLOC | SCOPE | IF | ELSE | LET ;

// ---------------------------------------------------------------- tensor intrinsics
intrinDef : INTRIN name=ID '{' intrinPart* '}' ;
intrinPart : which=(DESC | IMPL) '(' paramList? ')' body ;

// ---------------------------------------------------------------- lexical
FUNC : 'func' ;
SCHEDULE : 'schedule' ;
INTRIN : 'intrin' ;
DESC : 'desc' ;
IMPL : 'impl' ;
FOR : 'for' ;
IN : 'in' ;
BLOCK : 'block' ;
INIT : 'init' ;
WHERE : 'where' ;
READS : 'reads' ;
WRITES : 'writes' ;
ALLOC : 'alloc' ;
SCOPE : 'scope' ;
IF : 'if' ;
ELSE : 'else' ;
LET : 'let' ;
DTYPE : 'bool' | 'i8' | 'i16' | 'i32' | 'i64' | 'u8' | 'u16' | 'u32' | 'f16' | 'bf16' | 'f32' | 'f64' ;

FLOAT
  : DIGITS '.' DIGITS? EXPONENT?
  | '.' DIGITS EXPONENT?
  | DIGITS EXPONENT
  | 'inf'
  | 'nan'
  ;
INT : DIGITS ;
// A number run into letters (`0x10`, `1_000`, `2f`): reported by the driver as an invalid
// number (without it, `0x10` lexed as `0` then the name `x10`, and the error pointed further on).
BAD_NUMBER : (DIGITS ('.' DIGITS?)? | '.' DIGITS) EXPONENT? [A-Za-z_] [A-Za-z0-9_]* ;
ID : [A-Za-z_] [A-Za-z0-9_]* ;
STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* ;

ARROW : '->' ;
PLUS_EQ : '+=' ;
MINUS_EQ : '-=' ;
STAR_EQ : '*=' ;
FLOORDIV : '//' ;
LE : '<=' ;
GE : '>=' ;
EQ : '==' ;
NE : '!=' ;
AND : '&&' ;
OR : '||' ;

COMMENT : '#' ~[\r\n]* -> skip ;
WS : [ \t\r\n\f]+ -> skip ;
// Any other character: reported by the driver as "invalid character".
ERRCHAR : . ;

fragment DIGITS : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;
